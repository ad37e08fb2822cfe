#!/usr/bin/env bats
# lazy.bats - lazy synchronization (GPUACCEL_LAZY_SYNC) on the fake driver,
# which counts the synchronizations that reach it: a kernel-then-synchronize
# chain waits once, at the read that observes it, with the same data; host
# functions, page-locked memory, event queries and code with device-side
# assertions keep their waits; a stream destroyed after a deferred wait is
# waited for first; a
# deferred kernel's fault is returned by the call that observes it; under a
# CUDA tool (compute-sanitizer, Nsight) every wait is made.
load helpers

setup() {
    setup_fake
}

lazy() {
    env GPUACCEL_LAZY_SYNC=1 GPUACCEL_LOG=info LD_PRELOAD="$GA_LIB" LD_LIBRARY_PATH="$FAKE_DIR" \
        "$PROGS/lazy_prog" "$PTX" "$@"
}

@test "lazy_sync: a chain of synchronizations waits once, at the read" {
    run native "$PROGS/lazy_prog" "$PTX" chain 50
    echo "$output"
    has_words 'bad=0'
    has_words 'driver_waits=51'
    run lazy chain 50
    echo "$output"
    [ "$status" -eq 0 ]
    has_words 'bad=0'
    has_words 'driver_waits=1'
    [[ "$output" == *"lazy_sync: 51 of 51 synchronizations deferred, 1 waits made"* ]]
    run env GPUACCEL_LAZY_SYNC=0 LD_PRELOAD="$GA_LIB" LD_LIBRARY_PATH="$FAKE_DIR" \
        "$PROGS/lazy_prog" "$PTX" chain 50
    has_words 'driver_waits=51'
}

@test "lazy_sync: under a CUDA tool (its injection variables set) every wait is made" {
    for var in CUDA_INJECTION64_PATH NV_SANITIZER_INJECTION_PORT_BASE NVTX_INJECTION64_PATH; do
        run env "$var=x" GPUACCEL_LAZY_SYNC=1 GPUACCEL_LOG=info LD_PRELOAD="$GA_LIB" \
            LD_LIBRARY_PATH="$FAKE_DIR" "$PROGS/lazy_prog" "$PTX" chain 20
        echo "$output"
        [ "$status" -eq 0 ]
        has_words 'bad=0'
        has_words 'driver_waits=21'
        [[ "$output" == *"lazy_sync: a CUDA tool is attached ($var is set)"* ]]
    done
    run env NVTX_INJECTION64_PATH= GPUACCEL_LAZY_SYNC=1 LD_PRELOAD="$GA_LIB" \
        LD_LIBRARY_PATH="$FAKE_DIR" "$PROGS/lazy_prog" "$PTX" chain 20
    has_words 'driver_waits=1'
}

@test "lazy_sync: host functions and page-locked memory keep every wait" {
    for mode in hostfunc pinned; do
        run native "$PROGS/lazy_prog" "$PTX" $mode 20
        echo "$output"
        has_words 'bad=0'
        has_words 'driver_waits=21'
        run lazy $mode 20
        echo "$output"
        [ "$status" -eq 0 ]
        has_words 'bad=0'
        has_words 'driver_waits=21'
    done
    [[ "$output" == *"cuMemHostAlloc: host and device share memory from now on"* ]]
}

@test "lazy_sync: an event query observes the device" {
    run lazy event 20
    echo "$output"
    [ "$status" -eq 0 ]
    has_words 'bad=0'
    has_words 'driver_waits=20'
}

@test "lazy_sync: a deferred kernel's fault is returned by the read that observes it" {
    run native "$PROGS/lazy_prog" "$PTX" fault
    echo "$output"
    has_words 'sync=700 read=700'
    run lazy fault
    echo "$output"
    has_words 'sync=0 read=700'
}

@test "lazy_sync: code with device-side assertions keeps every wait" {
    { cat "$PTX"; echo "// .extern .func __assertfail"; } > "$BATS_TEST_TMPDIR/assert.ptx"
    run env GPUACCEL_LAZY_SYNC=1 GPUACCEL_LOG=info LD_PRELOAD="$GA_LIB" LD_LIBRARY_PATH="$FAKE_DIR" \
        "$PROGS/lazy_prog" "$BATS_TEST_TMPDIR/assert.ptx" chain 50
    echo "$output"
    [ "$status" -eq 0 ]
    has_words 'bad=0'
    has_words 'driver_waits=51'
    [[ "$output" == *"loaded a kernel with device-side assertions"* ]]
}

# hostmem_prog setfirst: the program sets the default pool's release threshold
# (12345 bytes), then allocates, frees and synchronizes: the driver gives the
# pool's reserve back down to the threshold at each synchronization, so a
# deferred one must be paid before cuMemGetInfo or a pool attribute is read.
@test "free memory and a pool's reserve read after a deferred sync are native's" {
    like_native GPUACCEL=0 GPUACCEL_LAZY_SYNC=1 -- "$PROGS/hostmem_prog" setfirst 8
    like_native GPUACCEL=0 GPUACCEL_LAZY_SYNC=1 -- "$PROGS/hostmem_prog" async 8
    export FAKECUDA_DEFER=1000000
    like_native GPUACCEL=0 GPUACCEL_LAZY_SYNC=1 -- "$PROGS/hostmem_prog" setfirst 8
}

# A stream per call (create, work, synchronize, destroy): the destroy pays the
# deferred wait first, so the stream is idle when it goes. Else the tracker
# must chain the legacy stream after the destroyed stream's queued work (an
# event recorded on it and a cuStreamWaitEvent per call, on the device dearer
# than the wait deferred), which every feature on made before.
@test "lazy_sync: a stream destroyed after its deferred synchronization is waited for, not chained" {
    run native "$PROGS/lazy_prog" "$PTX" percall 20
    echo "$output"
    has_words 'bad=0'
    has_words 'driver_waits=21'
    has_words 'event_waits=0'
    run env GPUACCEL=all GPUACCEL_LOG=info LD_PRELOAD="$GA_LIB" LD_LIBRARY_PATH="$FAKE_DIR" \
        "$PROGS/lazy_prog" "$PTX" percall 20
    echo "$output"
    [ "$status" -eq 0 ]
    has_words 'bad=0'
    has_words 'driver_waits=20'
    has_words 'event_waits=0'
    [[ "$output" == *"lazy_sync: 21 of 21 synchronizations deferred, 20 waits made"* ]]
}

# A stream per call with scratch from the driver's stream-ordered pool
# (create, cuMemAllocAsync, work, synchronize, cuMemFreeAsync, destroy):
# natively the synchronization comes before the free, so the freed scratch
# stays in the pool and the next call's allocation reuses it. A deferred
# synchronization paid after the free would give it back (release threshold
# 0) and every call would map it again: the wait is paid before the free.
@test "lazy_sync: scratch freed after a deferred synchronization stays in the pool" {
    run native "$PROGS/lazy_prog" "$PTX" percall-pool 20
    echo "$output"
    has_words 'bad=0'
    has_words 'pool_grows=1'
    for set in "GPUACCEL=0 GPUACCEL_LAZY_SYNC=1" "GPUACCEL=all GPUACCEL_ASYNC_POOL=0"; do
        run env $set GPUACCEL_LOG=info LD_PRELOAD="$GA_LIB" LD_LIBRARY_PATH="$FAKE_DIR" \
            "$PROGS/lazy_prog" "$PTX" percall-pool 20
        echo "$set: $output"
        [ "$status" -eq 0 ]
        has_words 'bad=0'
        has_words 'pool_grows=1'
        [[ "$output" == *"lazy_sync: 21 of 21 synchronizations deferred"* ]]
    done
}
