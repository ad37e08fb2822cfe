#!/usr/bin/env bats
# staging.bats - large pageable copies through the library's staging
# (GPUACCEL_STAGING), against the fake driver, whose device memory the host
# cannot touch and which knows page-locked memory from pageable memory as the
# real driver does: every byte, every return code and the output as native;
# the copies were staged (threshold and chunk set low so that the program's
# sizes fall around them; every copy that qualifies staged, GPUACCEL_STAGING_ADAPT=0,
# but in the last test, which checks the admission by measurement).
load helpers

setup() { setup_fake; }

STAGE="GPUACCEL_STAGING=1 GPUACCEL_STAGING_MIN=64K GPUACCEL_STAGING_CHUNK=256K GPUACCEL_STAGING_THREADS=4 GPUACCEL_STAGING_ADAPT=0"

@test "staging: every check passes natively" {
    run native "$PROGS/staging_prog" 4
    echo "$output"
    [ "$status" -eq 0 ]
    # 7 sizes by 5 entry points, 5 copies too long (nothing copied), after fork, threads
    [ "$(echo "$output" | grep -cw 'ok=1')" -eq 42 ]
    [ "$(echo "$output" | grep -c '^too long .* ok=1$')" -eq 5 ]
}

@test "staging on: same bytes and codes, large copies staged both ways" {
    like_native $STAGE -- "$PROGS/staging_prog" 4
    echo "$output" | grep -Eq '^gpuaccel: staging: htod=[1-9][0-9]* dtoh=[1-9][0-9]* '
    # the sizes under the threshold, the too-long copies and the pinned checks went to the driver
    echo "$output" | grep -Eq '^gpuaccel: staging: .* declined=[1-9]'
}

@test "staging with every feature on: same bytes and codes" {
    like_native GPUACCEL=all $STAGE -- "$PROGS/staging_prog" 6
    echo "$output" | grep -Eq '^gpuaccel: staging: htod=[1-9][0-9]* dtoh=[1-9][0-9]* '
}

@test "staging: one copying thread (no helpers) and the default settings: same bytes" {
    like_native GPUACCEL_STAGING=1 GPUACCEL_STAGING_MIN=64K GPUACCEL_STAGING_CHUNK=256K \
        GPUACCEL_STAGING_THREADS=1 GPUACCEL_STAGING_ADAPT=0 -- "$PROGS/staging_prog" 2
    like_native GPUACCEL_STAGING=1 GPUACCEL_STAGING_ADAPT=0 -- "$PROGS/staging_prog" 2
    echo "$output" | grep -Eq '^gpuaccel: staging: htod=[1-9][0-9]* dtoh=[1-9][0-9]* '
}

@test "staging as shipped: each kind and size of copy goes the way measured faster, same bytes" {
    # On the fake driver its own copies are the faster way (a memcpy): after
    # the copies before the first ring (early) and one staged copy of each
    # kind and size, most go to the driver (driver=), every 16th is staged.
    like_native GPUACCEL_STAGING=1 GPUACCEL_STAGING_MIN=64K GPUACCEL_STAGING_CHUNK=256K \
        -- "$PROGS/staging_prog" 8
    echo "$output" | grep -Eq '^gpuaccel: staging: htod=[1-9][0-9]* dtoh=[1-9][0-9]* '
    echo "$output" | grep -Eq '^gpuaccel: staging: .* early=[1-9][0-9]* grown=[0-9]+ driver=[1-9][0-9]*$'
}

@test "staging at debug level: the first 64 copies offered say where each went and its time" {
    run shim env GPUACCEL_STAGING=1 GPUACCEL_STAGING_MIN=64K GPUACCEL_STAGING_CHUNK=256K \
        GPUACCEL_LOG=debug "$PROGS/staging_prog" 4
    echo "$output"
    [ "$status" -eq 0 ]
    lines=$(echo "$output" | grep -E '^gpuaccel: debug: staging: (upload|download) of [0-9]+ bytes: ')
    [ "$(echo "$lines" | wc -l)" -eq 64 ]
    # every line names a way and a time; copies before the first ring, then staged ones with their slots
    [ -z "$(echo "$lines" | grep -Ev ": (staged(, a new ring's first, not counted)? \(slots of [0-9]+ bytes\)|the driver's, [a-z ,]+) in [0-9]+ us$")" ]
    echo "$lines" | grep -q "the driver's, no ring yet in"
    echo "$lines" | grep -Eq 'staged \(slots of [0-9]+ bytes\) in'
    # nothing at the default level
    run shim env GPUACCEL_STAGING=1 GPUACCEL_STAGING_MIN=64K "$PROGS/staging_prog" 4
    [ -z "$(echo "$output" | grep 'debug: staging')" ]
}

@test "staging at debug level: a loop's new ring names its first copy, left out of the figures" {
    # Its first use costs more than the way does (on a GPU host 1.1 ms against
    # 30 us for a 256 KiB download), so its time is not the staged way's figure
    # (test_staging's new_rings_first_copy_uncounted shows the choice that
    # follows); the debug line says so, and the next copy is staged again.
    run shim env GPUACCEL_STAGING=1 GPUACCEL_STAGING_MIN=64K GPUACCEL_STAGING_CHUNK=256K \
        GPUACCEL_LOG=debug "$PROGS/staging_prog" --loop 40 262144
    echo "$output"
    [ "$status" -eq 0 ]
    echo "$output" | grep -qx 'loop 40 x 262144 ok=1'
    lines=$(echo "$output" | grep -E '^gpuaccel: debug: staging: download of 262144 bytes: ')
    first=$(echo "$lines" | grep -n -m1 "staged, a new ring's first, not counted" | cut -d: -f1)
    [ -n "$first" ]
    echo "$lines" | sed -n "$((first + 1))p" | grep -Eq ': staged \(slots of [0-9]+ bytes\) in'
}

@test "staging_prog --loop: a count or size out of range is refused" {
    run shim "$PROGS/staging_prog" --loop 0 262144
    [ "$status" -eq 2 ]
    [[ "$output" == *"--loop N SIZE"* ]]
}
