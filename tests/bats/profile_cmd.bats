#!/usr/bin/env bats
# profile_cmd.bats - `gpuaccel profile` as a command that runs a program: it
# passes a signal on to the program and waits for it, says how the program
# ended (a crash is named as one), leaves no claim or temporary file behind,
# publishes only whole files, and exits non-zero when no profile was written;
# with --phase, counts only inside the windows the program's lines mark.
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

# signalled SIG [OPTIONS...]: gpuaccel profile (with OPTIONS) in the
# background on a program that waits; once it is ready, SIG goes to gpuaccel
# alone. Sets gstatus and child.
signalled() {
    local sig=$1
    shift
    # env execs gpuaccel: $! is gpuaccel itself (a function would be a subshell)
    env LD_LIBRARY_PATH="$FAKE_DIR" GPUACCEL_LIB="$GA_LIB" TMPDIR="$T" "$GA_TOOL" profile \
        -o "$T/s" "$@" -- "$PROGS/wait_prog" 60 >"$T/out" 2>"$T/err" &
    local gpid=$! i
    for i in $(seq 100); do
        grep -q '^ready' "$T/out" && break
        sleep 0.1
    done
    child=$(sed -n 's/^ready pid=//p' "$T/out")
    [ -n "$child" ]
    kill -"$sig" "$gpid"
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

# --phase: window_prog (tests/progs/window_prog.c) marks windows around known
# work; inside each: 5 uploads, 3 allocations, 4 frees of 20,992 bytes (one of
# a block allocated before the window), 2 launches.
counts() { # PREFIX: uploads allocations frees free_bytes unknown launches small_reads
    python3 -c "import json,sys; d=json.load(open(sys.argv[1]+'.json')); a=d['allocations']
up=sum(b['count'] for b in d['copies']['buckets'] if b['direction']=='htod')
print(up, a['count'], a['frees'], a['free_bytes'], a['frees_unknown_size'], d['kernels']['launches'], d['copies']['small_dtoh_reads'])" "$1"
}

window() { # PREFIX KEY: the JSON's window KEY, or "none"
    python3 -c "import json,sys; d=json.load(open(sys.argv[1]+'.json'))
print(d['window'][sys.argv[2]] if 'window' in d else 'none')" "$1" "$2"
}

@test "--phase: only the windows count, every window summed, the output passed on as it comes" {
    command -v python3 >/dev/null || skip "no python3"
    want=$(native "$PROGS/window_prog" "$PTX")
    run env TMPDIR="$T" LD_LIBRARY_PATH="$FAKE_DIR" GPUACCEL_LIB="$GA_LIB" "$GA_TOOL" profile \
        -o "$T/w" --phase '^begin$' '^end$' -- "$PROGS/window_prog" "$PTX"
    echo "$output"
    [ "$status" -eq 0 ]
    [ "$(echo "$output" | grep -v '^gpuaccel:' | grep -v '^outside ')" = "$want" ]
    [ "$(echo "$output" | grep -c '^outside [0-2]$')" -eq 3 ] # its stderr too
    has_words 'gpuaccel: profile: --phase: 2 windows'
    [ "$(counts "$T/w")" = "10 6 8 41984 0 4 0" ]
    [ "$(window "$T/w" windows)" = 2 ]
    [ "$(window "$T/w" start)" = '^begin$' ]
    [ "$(python3 -c "import json; print(json.load(open('$T/w.json'))['schema'])")" = gpuaccel-profile/4 ]
    grep -q "^window: from a line matching '\^begin\$' to one matching '\^end\$': 2 windows" "$T/w.txt"
    # one window: half of it
    run env TMPDIR="$T" LD_LIBRARY_PATH="$FAKE_DIR" GPUACCEL_LIB="$GA_LIB" "$GA_TOOL" profile \
        -o "$T/one" --phase begin end -- "$PROGS/window_prog" "$PTX" 1
    [ "$status" -eq 0 ]
    [ "$(counts "$T/one")" = "5 3 4 20992 0 2 0" ]
    # the window file is gone
    [ -z "$(ls "$T" | grep '^gpuaccel-window')" ]
}

@test "without --phase: the whole process counts, as before" {
    command -v python3 >/dev/null || skip "no python3"
    run ga profile -o "$T/all" -- "$PROGS/window_prog" "$PTX"
    [ "$status" -eq 0 ]
    [ "$(counts "$T/all")" = "43 19 19 133120 0 13 1" ]
    [ "$(window "$T/all" windows)" = none ]
    no_line 'gpuaccel: profile: --phase'
}

@test "--phase whose START never matches: said, exit 1, the profile written with nothing counted" {
    command -v python3 >/dev/null || skip "no python3"
    want=$(native "$PROGS/window_prog" "$PTX" 1)
    run env TMPDIR="$T" LD_LIBRARY_PATH="$FAKE_DIR" GPUACCEL_LIB="$GA_LIB" "$GA_TOOL" profile \
        -o "$T/n" --phase '^never' end -- "$PROGS/window_prog" "$PTX" 1
    echo "$output"
    [ "$status" -eq 1 ]
    [ "$(echo "$output" | grep -v '^gpuaccel:' | grep -v '^outside ')" = "$want" ]
    has_words "gpuaccel: profile: --phase: no line of $PROGS/window_prog's output matched START '^never': the profile counts nothing"
    [ "$(counts "$T/n")" = "0 0 0 0 0 0 0" ]
    [ "$(window "$T/n" windows)" = 0 ]
    # an END that never comes after START: the window runs to the end, said, exit 1
    run env TMPDIR="$T" LD_LIBRARY_PATH="$FAKE_DIR" GPUACCEL_LIB="$GA_LIB" "$GA_TOOL" profile \
        -o "$T/e" --phase begin '^never' -- "$PROGS/window_prog" "$PTX" 1
    echo "$output"
    [ "$status" -eq 1 ]
    has_words "gpuaccel: profile: --phase: no line matched END '^never' after the last START line"
    [ "$(window "$T/e" open_at_exit)" = True ]
    [ "$(counts "$T/e")" = "16 7 9 62976 0 5 1" ]
    [ -z "$(ls "$T" | grep '^gpuaccel-window')" ]
}

@test "--phase with a pattern that is not a regular expression: one line naming --phase, nothing run" {
    run ga profile -o "$T/b" --phase 'begin' '(' -- sh -c 'echo ran'
    echo "$output"
    [ "$status" -eq 2 ]
    [ "$(echo "$output" | grep -c -- "--phase: '(' is not a valid regular expression")" -eq 1 ]
    [ "$(echo "$output" | grep -c '^gpuaccel: ')" -eq 1 ]
    no_line '^ran$'
    [ ! -e "$T/b.json" ]
    run ga profile --phase begin -- true
    [ "$status" -eq 2 ]
    has_words "gpuaccel: profile: --phase needs two values: START END"
}

@test "--phase: SIGTERM to gpuaccel still goes to the program; the window file is removed" {
    signalled TERM --phase '^ready' '^never'
    [ "$gstatus" -eq 143 ]
    run kill -0 "$child"
    [ "$status" -ne 0 ]
    [ -s "$T/s.json" ]
    grep -q "wait_prog was killed by SIGTERM" "$T/err"
    [ -z "$(ls "$T" | grep '^gpuaccel-window')" ]
    no_leftovers "$T/s"
}
