#!/usr/bin/env bats
# streams.bats - streams (GPUACCEL_STREAMS) on the fake driver: a stream per
# operation gives the same results as natively while the driver creates one
# stream per (flags, priority); a stream the program gave an attribute is
# destroyed for real; switched off, every creation reaches the driver.
load helpers

setup() {
    setup_fake
}

@test "streams: destroyed streams handed out again by flags, data intact" {
    native_out=$(native "$PROGS/streams_prog" 20)
    echo "$native_out"
    # 20 in the loop, the one with an attribute, the one after it
    has_words 'driver_stream_creates=22' "$native_out"
    run env GPUACCEL_STREAMS=1 GPUACCEL_LOG=info LD_PRELOAD="$GA_LIB" LD_LIBRARY_PATH="$FAKE_DIR" \
        "$PROGS/streams_prog" 20
    echo "$output"
    [ "$status" -eq 0 ]
    has_words 'bad=0'
    # one blocking and one non-blocking stream serve the loop; the one given
    # an attribute is destroyed, so the last creation makes a new one
    has_words 'driver_stream_creates=3'
    [[ "$output" == *"streams: 19 of 22 stream creations served from kept streams"* ]]
    run env GPUACCEL_STREAMS=0 LD_PRELOAD="$GA_LIB" LD_LIBRARY_PATH="$FAKE_DIR" "$PROGS/streams_prog" 20
    has_words 'driver_stream_creates=22'
}
