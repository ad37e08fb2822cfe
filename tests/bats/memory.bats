#!/usr/bin/env bats
# memory.bats - stream-ordered allocations (async_pool) and page-locked host
# memory (pinned) on the fake driver: results as native, the driver's pool
# keeps its memory between synchronizations while the program sees what it
# would natively, and the pinned cache spares the driver its allocations.

load helpers

setup() {
    setup_fake
}

@test "async_pool: the default pool keeps its memory; the program reads its own threshold and the same free memory" {
    native_out=$(native "$PROGS/hostmem_prog" async 16)
    echo "native: $native_out"
    has_words 'reserved=0' "$native_out"
    run env GPUACCEL_ASYNC_POOL=1 LD_PRELOAD="$GA_LIB" LD_LIBRARY_PATH="$FAKE_DIR" "$PROGS/hostmem_prog" async 16
    echo "library: $output"
    [ "$status" -eq 0 ]
    has_words 'bad=0'
    has_words 'threshold=0' # as the program would read it
    has_words 'reserved=1048576' # kept across the synchronizations
    [ "$(echo "$output" | grep '^free=')" = "$(echo "$native_out" | grep '^free=')" ]
    run env GPUACCEL_ASYNC_POOL=0 LD_PRELOAD="$GA_LIB" LD_LIBRARY_PATH="$FAKE_DIR" "$PROGS/hostmem_prog" async 16
    [ "$output" = "$native_out" ]
}

@test "async_pool: a threshold the program set is left alone" {
    like_native GPUACCEL_ASYNC_POOL=1 -- "$PROGS/hostmem_prog" setfirst 8
    has_words 'threshold=12345'
    no_line 'default memory pool keeps up to'
    has_words 'async_pool: 0 of 8 stream-ordered allocations'
}

@test "pinned: page-locked allocations reused by size class and flags, data intact" {
    native_out=$(native "$PROGS/hostmem_prog" pinned 30)
    has_words 'driver_host_allocs=30' "$native_out"
    run env GPUACCEL_PINNED=1 GPUACCEL_LOG=info LD_PRELOAD="$GA_LIB" LD_LIBRARY_PATH="$FAKE_DIR" \
        "$PROGS/hostmem_prog" pinned 30
    echo "$output"
    [ "$status" -eq 0 ]
    has_words 'bad=0'
    # five (size class, flags) pairs: 4096/0, 65536/portable, 5000->5120/0,
    # 1 MiB/mapped, and 4096 from cuMemAllocHost (whose flags the driver
    # chooses: never mixed with cuMemHostAlloc's); every other one is a reuse
    has_words 'driver_host_allocs=5'
    [[ "$output" == *"pinned: 25 of 30 page-locked allocations served from the cache"* ]]
    run env GPUACCEL_PINNED=0 LD_PRELOAD="$GA_LIB" LD_LIBRARY_PATH="$FAKE_DIR" "$PROGS/hostmem_prog" pinned 30
    has_words 'driver_host_allocs=30'
}

@test "pinned: a portable block is portable although small blocks kept here share its chunk" {
    # FAKECUDA_HOST_CHUNKS: the fake driver places small page-locked
    # allocations in shared chunks whose flags win, as a real driver was seen to
    native_out=$(FAKECUDA_HOST_CHUNKS=1 native "$PROGS/hostmem_prog" portable)
    has_words 'portable=1' "$native_out"
    run env FAKECUDA_HOST_CHUNKS=1 GPUACCEL_PINNED=1 GPUACCEL_LOG=debug LD_PRELOAD="$GA_LIB" \
        LD_LIBRARY_PATH="$FAKE_DIR" "$PROGS/hostmem_prog" portable
    echo "$output"
    [ "$status" -eq 0 ]
    has_words 'portable=1'
    has_words 'bad=0'
    [[ "$output" == *"made again apart from other blocks: as asked"* ]]
}

@test "pinned: a limit of 0 keeps nothing; every allocation reaches the driver" {
    run env GPUACCEL_PINNED=1 GPUACCEL_PINNED_LIMIT=0 LD_PRELOAD="$GA_LIB" LD_LIBRARY_PATH="$FAKE_DIR" \
        "$PROGS/hostmem_prog" pinned 12
    echo "$output"
    [ "$status" -eq 0 ]
    has_words 'driver_host_allocs=12'
    has_words 'bad=0'
}
