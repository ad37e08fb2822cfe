#!/usr/bin/env bats
# capture.bats - real programs' stream captures and "host" pointers through
# the library, against the fake driver, which enforces the capture rules and
# keeps device memory out of the host's reach as a GPU does: results and
# return codes as native with each feature and with all of them.
load helpers

setup() { setup_fake; }

ALL=$(every_feature_env)

@test "capture: every check passes natively" {
    run native "$PROGS/capture_prog" "$PTX"
    echo "$output"
    [ "$status" -eq 0 ]
    [ "$(echo "$output" | grep -cw 'ok=1')" -eq 5 ]
}

@test "capture: a capture with memory nodes, a joined stream destroyed mid-capture (pool)" {
    like_native GPUACCEL_POOL=1 -- "$PROGS/capture_prog" "$PTX"
}

@test "capture: the same under coalescing" {
    like_native GPUACCEL_COALESCE=1 -- "$PROGS/capture_prog" "$PTX"
}

@test "capture: the same under graphs" {
    like_native GPUACCEL_GRAPHS=1 -- "$PROGS/capture_prog" "$PTX"
}

@test "capture: the same with every feature on, and with the profiler timing kernels" {
    # shellcheck disable=SC2086
    like_native $ALL -- "$PROGS/capture_prog" "$PTX"
    like_native $ALL GPUACCEL_PROFILE="$BATS_TEST_TMPDIR/p" GPUACCEL_PROFILE_KERNELS=1 -- \
        "$PROGS/capture_prog" "$PTX"
}

@test "capture: an invalidated capture ends, and the pool serves again after it" {
    like_native GPUACCEL_POOL=1 -- "$PROGS/capture_prog" "$PTX" invalid
    has_words end=901
    hits=$(echo "$output" | sed -n 's/^gpuaccel: pool: hits=\([0-9]*\).*/\1/p')
    [ "${hits:-0}" -ge 60 ]
}

@test "host pointers: device memory as a copy's host side, zero sizes and NULLs" {
    run native "$PROGS/hostptr_prog" "$PTX"
    echo "$output"
    [ "$status" -eq 0 ]
    has_words 'words wrong=0'
    # shellcheck disable=SC2086
    like_native $ALL -- "$PROGS/hostptr_prog" "$PTX"
    hits=$(echo "$output" | sed -n 's/^gpuaccel: coalesce: hits=\([0-9]*\).*/\1/p')
    [ "${hits:-0}" -gt 0 ] # coalescing served the host reads, and left the others alone
}

@test "capture: memory a capture allocated keeps the tuner away (never snapshotted), output as native" {
    table="$BATS_TEST_TMPDIR/c.table"
    like_native GPUACCEL_TUNER="$table" -- "$PROGS/capture_prog" "$PTX"
    cat "$table"
    grep -q '^# no: add .*not tried: the program has memory the tuner cannot restore (.* a graph.s)$' "$table"
}
