#!/usr/bin/env bats
# deferred.bats - the test programs on the fake driver with deferred
# completion (FAKECUDA_DEFER, tests/fake/fakecuda.c): work waits in its stream
# until something waits for it, so a wait the library drops (a deferred
# synchronization never paid, a pooled block handed out before its fence, a
# staging slot reused before its copy ran, a coalescing window installed
# before its fill landed) reads stale data here, as it would on a busy GPU.
# Each program runs natively and with the library, under each feature that
# acts on it, the defaults and GPUACCEL=all, deferred two ways: until waited
# for (FAKECUDA_DEFER=1000000: nothing completes on its own) and briefly
# (FAKECUDA_DEFER=3: queries see work still queued, then done); its output
# must be its native output under the same deferral. Then the two-device
# program (FAKECUDA_DEVICES=2) under the defaults and GPUACCEL=all, deferred
# and not.
load helpers

setup() { setup_fake; }

DEFERS="1000000 3"

# The environment for a feature name: the feature alone, "defaults" (no
# GPUACCEL setting), "all", or all-FEATURE (every feature but that one).
feature_env() {
    case $1 in
    defaults) echo "GPUACCEL_LOG=warn" ;;
    all) echo "GPUACCEL=all" ;;
    all-*) echo "GPUACCEL=all GPUACCEL_$(echo "${1#all-}" | tr 'a-z' 'A-Z')=0" ;;
    *) echo "GPUACCEL=0 GPUACCEL_$(echo "$1" | tr 'a-z' 'A-Z')=1" ;;
    esac
}

# Lines a feature changes by design, not data: counts the fake driver keeps
# of the calls that reached it (the features exist to spare them), the
# default pool's reserve as async_pool keeps it, and the code of a
# synchronization lazy_sync answered (the read after it returns the fault:
# tests/bats/lazy.bats).
data_only() {
    sed -e '/^driver_waits=/d' -e '/^driver_stream_creates=/d' -e '/^driver_host_allocs=/d' \
        -e '/^reserved=/d' -e 's/ gathers=[0-9]*$//' -e 's/^sync=[0-9]* read=/read=/'
}

# deferred_like_native [VAR=VALUE...] FEATURE... -- CMD ARGS: under each
# deferral, CMD's output with the library under each FEATURE is its native
# output, less data_only's lines, and both exit 0; the VAR=VALUE settings
# hold for both runs. Every difference is shown, then the test fails.
deferred_like_native() {
    local extra=() feats=() d f want got rc failed=0
    while [[ $1 == *=* ]]; do extra+=("$1"); shift; done
    while [ "$1" != -- ]; do feats+=("$1"); shift; done
    shift
    for d in $DEFERS; do
        if ! want=$(env -u LD_PRELOAD "${extra[@]}" FAKECUDA_DEFER="$d" LD_LIBRARY_PATH="$FAKE_DIR" "$@"); then
            echo "native run failed under FAKECUDA_DEFER=$d: $want"
            return 1
        fi
        want=$(echo "$want" | data_only)
        for f in "${feats[@]}"; do
            rc=0
            # shellcheck disable=SC2046
            got=$(env $(feature_env "$f") "${extra[@]}" FAKECUDA_DEFER="$d" LD_PRELOAD="$GA_LIB" \
                LD_LIBRARY_PATH="$FAKE_DIR" "$@" 2>"$BATS_TEST_TMPDIR/err") || rc=$?
            got=$(echo "$got" | grep -v '^gpuaccel:' | data_only)
            if [ "$rc" -ne 0 ] || [ "$got" != "$want" ]; then
                echo "FAKECUDA_DEFER=$d $f ${extra[*]}: exit $rc, output differs from native:"
                diff <(echo "$want") <(echo "$got") | head -8
                head -5 "$BATS_TEST_TMPDIR/err"
                failed=$((failed + 1))
            fi
        done
    done
    [ "$failed" -eq 0 ]
}

@test "deferred: the fake driver keeps work queued until something waits for it" {
    run env FAKECUDA_DEFER=1000000 LD_LIBRARY_PATH="$FAKE_DIR" "$PROGS/defer_prog" "$PTX" fake
    echo "$output"
    [ "$status" -eq 0 ]
    [ "$(echo "$output" | grep -cw 'ok=1')" -eq 8 ]
    # queued for 3 more calls: three queries say not ready, the fourth done
    run env FAKECUDA_DEFER=3 LD_LIBRARY_PATH="$FAKE_DIR" "$PROGS/defer_prog" "$PTX" aging
    has_words 'done after queries=4 value=9'
    run env FAKECUDA_DEFER=1 LD_LIBRARY_PATH="$FAKE_DIR" "$PROGS/defer_prog" "$PTX" aging
    has_words 'done after queries=2 value=9'
    # without deferral, work is done when its call returns
    run native "$PROGS/defer_prog" "$PTX" aging
    has_words 'done after queries=1 value=9'
}

@test "deferred: lazy_sync pays every deferred wait before a call that observes the device" {
    for mode in "chain 50" "hostfunc 20" "pinned 20" "event 20" fault; do
        # shellcheck disable=SC2086
        deferred_like_native lazy_sync defaults all -- "$PROGS/lazy_prog" "$PTX" $mode
    done
    # a non-blocking stream's kernel, a context synchronization, a legacy-stream read
    deferred_like_native lazy_sync defaults all -- "$PROGS/defer_prog" "$PTX" settle 20
}

@test "deferred: a pooled block is not handed out while a kernel queued before its free runs" {
    deferred_like_native pool defaults all -- "$PROGS/defer_prog" "$PTX" fence 20
    # its stream destroyed (or kept by the streams feature) before the free
    deferred_like_native pool streams defaults all -- "$PROGS/defer_prog" "$PTX" fence-gone 20
    deferred_like_native FAKECUDA_MEM=$((40 << 20)) pool defaults all -- "$PROGS/oom_prog"
}

@test "deferred: .item() reads and synchronous reads are served only with what landed" {
    deferred_like_native coalesce lazy_sync defaults all -- "$PROGS/item_prog" "$PTX"
    # a synchronous read between an .item() copy and its sync: a window the
    # copy's fill goes into holds nothing before that sync
    deferred_like_native coalesce lazy_sync defaults all -- "$PROGS/item_prog" "$PTX" mixed
    deferred_like_native coalesce all -- "$PROGS/query_prog" "$PTX" write 3
    deferred_like_native coalesce all -- "$PROGS/door_linked" "$PTX"
}

@test "deferred: mix_prog under each feature, the defaults and all" {
    deferred_like_native pool async_pool streams lazy_sync graphs coalesce staging pinned \
        defaults all -- "$PROGS/mix_prog" "$PTX"
}

@test "deferred: staged copies reuse a slot only once its copy ran" {
    local stage="GPUACCEL_STAGING_MIN=64K GPUACCEL_STAGING_CHUNK=256K GPUACCEL_STAGING_THREADS=4 GPUACCEL_STAGING_ADAPT=0"
    # shellcheck disable=SC2086
    deferred_like_native $stage staging defaults all -- "$PROGS/staging_prog" 4
}

# With lazy_sync too: a deferred synchronization would leave the driver's
# pool its reserve, so cuMemGetInfo and the pool's attributes pay the owed
# wait first (they observe it).
@test "deferred: stream-ordered and page-locked memory" {
    deferred_like_native async_pool lazy_sync defaults all -- "$PROGS/hostmem_prog" async 24
    deferred_like_native async_pool lazy_sync defaults all -- "$PROGS/hostmem_prog" setfirst 8
    deferred_like_native pinned defaults all -- "$PROGS/hostmem_prog" pinned 24
    # copies from and into page-locked memory still queued when it is freed
    deferred_like_native pinned defaults all -- "$PROGS/defer_prog" "$PTX" pinned 20
}

@test "deferred: kept streams, graphs, captures and many threads" {
    deferred_like_native streams defaults all -- "$PROGS/streams_prog"
    deferred_like_native graphs defaults all -- "$PROGS/graphs_prog" "$PTX"
    deferred_like_native graphs all -- "$PROGS/graphs_prog" "$PTX" unflushed
    deferred_like_native pool coalesce graphs all -- "$PROGS/capture_prog" "$PTX"
    deferred_like_native all -- "$PROGS/stress_prog" "$PTX" 1 8 42
}

@test "two devices: every check passes natively, deferred or not; one device is a skip" {
    local d
    for d in 0 1000000 3; do
        run env FAKECUDA_DEVICES=2 FAKECUDA_DEFER=$d LD_LIBRARY_PATH="$FAKE_DIR" \
            "$PROGS/two_dev_prog" "$PTX"
        echo "$output"
        [ "$status" -eq 0 ]
        [ "$(echo "$output" | grep -cw 'ok=1')" -eq 6 ]
        has_words 'devices=2 peer=11'
        # enabled both ways; the second time the driver says so
        has_words 'enable codes=0 0 704'
    done
    run native "$PROGS/two_dev_prog" "$PTX"
    [ "$status" -eq 77 ]
}

@test "two devices: the defaults and every feature on give the native output, deferred or not" {
    DEFERS="0 1000000 3"
    export FAKECUDA_DEVICES=2
    deferred_like_native defaults all -- "$PROGS/two_dev_prog" "$PTX"
    deferred_like_native pool coalesce lazy_sync graphs -- "$PROGS/two_dev_prog" "$PTX" 12
}
