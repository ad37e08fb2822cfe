#!/usr/bin/env bats
# profile_cmd.bats - `gpuaccel profile` as a command that runs a program: it
# passes a signal on to the program and waits for it, says how the program
# ended (a crash is named as one), leaves no claim or temporary file behind,
# publishes only whole files, and exits non-zero when no profile was written.
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

# no_leftovers BASE: no claim, no temporary file of the run's.
no_leftovers() {
    [ ! -e "$1.owner" ] || { echo "left: $1.owner"; return 1; }
    local tmp
    tmp=$(ls "$1".*tmp 2>/dev/null || true)
    [ -z "$tmp" ] || { echo "left: $tmp"; return 1; }
}

# signalled SIG: gpuaccel profile in the background on a program that waits;
# once it is ready, SIG goes to gpuaccel alone. Sets gstatus and child.
signalled() {
    # env execs gpuaccel: $! is gpuaccel itself (a function would be a subshell)
    env LD_LIBRARY_PATH="$FAKE_DIR" GPUACCEL_LIB="$GA_LIB" "$GA_TOOL" profile -o "$T/s" -- \
        "$PROGS/wait_prog" 60 >"$T/out" 2>"$T/err" &
    local gpid=$! i
    for i in $(seq 100); do
        grep -q '^ready' "$T/out" && break
        sleep 0.1
    done
    child=$(sed -n 's/^ready pid=//p' "$T/out")
    [ -n "$child" ]
    kill -"$1" "$gpid"
    gstatus=0
    wait "$gpid" || gstatus=$?
    cat "$T/err"
}

@test "SIGTERM to gpuaccel goes to the program; it waits, the profile is written, the child is gone" {
    signalled TERM
    [ "$gstatus" -eq 143 ]
    run kill -0 "$child"
    [ "$status" -ne 0 ]
    [ -s "$T/s.json" ]
    [ -s "$T/s.txt" ]
    grep -q 'stopped by a signal' "$T/s.txt"
    grep -q "wait_prog was killed by SIGTERM" "$T/err"
    no_leftovers "$T/s"
}

@test "SIGINT to gpuaccel goes to the program too" {
    signalled INT
    [ "$gstatus" -eq 130 ]
    run kill -0 "$child"
    [ "$status" -ne 0 ]
    [ -s "$T/s.json" ]
    no_leftovers "$T/s"
}

@test "a crash is named as a crash, not as a program without CUDA calls" {
    # a half-written file of this run's names is removed; another run's (c.other) is not
    touch "$T/c.4242.json.tmp" "$T/c.other.json.tmp"
    run ga profile -o "$T/c" -- "$PROGS/wait_prog" crash
    echo "$output"
    [ "$status" -eq 139 ]
    [[ "$output" == *"wait_prog was killed by SIGSEGV"* ]]
    [[ "$output" != *"no CUDA call"* ]]
    no_line 'exit status 139([^0-9]|$)'
    [ ! -e "$T/c.json" ]
    [ ! -e "$T/c.4242.json.tmp" ]
    [ -e "$T/c.other.json.tmp" ]
    rm "$T/c.other.json.tmp"
    no_leftovers "$T/c" # the claim the crashed process held is gone too
}

@test "no profile written is a failure: -o where nothing can be created, a program without CUDA" {
    run ga profile -o /proc/p -- sh -c 'echo ran'
    echo "$output"
    [ "$status" -eq 2 ]
    [[ "$output" == *"-o /proc/p: cannot create files there"* ]]
    [[ "$output" != *"ran"* ]]
    run ga profile -o "$T/none" -- true
    echo "$output"
    [ "$status" -eq 1 ]
    [[ "$output" == *"no profile was written to $T/none.json (true ended with exit status 0)"* ]]
    no_leftovers "$T/none"
    # the program's own failure is what gpuaccel returns
    run ga profile -o "$T/none" -- sh -c 'exit 5'
    [ "$status" -eq 5 ]
}

@test "the files appear whole or not at all: a write that fails leaves none, and no temporary" {
    # a file size limit the profile cannot fit in: every write fails (EFBIG)
    run env LD_LIBRARY_PATH="$FAKE_DIR" GPUACCEL_LIB="$GA_LIB" sh -c \
        'trap "" XFSZ; ulimit -f 2; exec "$0" profile -o "$1" -- "$2" 1' \
        "$GA_TOOL" "$T/big" "$PROGS/wait_prog"
    echo "$output"
    [ "$status" -eq 1 ]
    [[ "$output" == *"no profile was written to $T/big.json"* ]]
    [ ! -e "$T/big.json" ]
    [ ! -e "$T/big.txt" ]
    [ ! -e "$T/big.trace.json" ]
    no_leftovers "$T/big"
    # and with room, the three files, nothing else
    run ga profile -o "$T/ok" -- "$PROGS/wait_prog" 0
    [ "$status" -eq 0 ]
    [ "$(ls "$T" | grep -c '^ok\.')" -eq 3 ]
}
