#!/usr/bin/env bats
# loader.bats - the library is a good citizen of the dynamic loader: RTLD_NEXT
# keeps working, a program without CUDA sees no change and no output, only the
# intended symbols are exported, and nothing runs at load time.
load helpers
bats_require_minimum_version 1.5.0 # run !

setup() { setup_fake; }

@test "RTLD_NEXT stays relative to the caller" {
    run env LD_PRELOAD="$GA_LIB" "$PROGS/rtld_next"
    echo "$output"
    [ "$status" -eq 0 ]
    [ "$output" = "probe=102" ]
}

@test "a program that never loads libcuda: same answers, no output" {
    expected=$(env -u LD_PRELOAD "$PROGS/nocuda")
    [ "$expected" = "cuInit=null cuMemAlloc_v2=null strlen=found" ]
    run env LD_PRELOAD="$GA_LIB" GPUACCEL_LOG=debug "$PROGS/nocuda"
    [ "$status" -eq 0 ]
    [ "$output" = "$expected" ]
}

@test "with the driver loaded, dlsym(RTLD_DEFAULT) finds the wrapper and it works" {
    compare_out=$(native "$PROGS/door_dlsym" "$PTX")
    run shim "$PROGS/door_dlsym" "$PTX"
    [ "$status" -eq 0 ]
    [ "$output" = "$compare_out" ]
}

@test "exports: only cu[A-Z]*, dlsym, dlvsym and gpuaccel_*" {
    run sh -c "nm -D --defined-only '$GA_LIB' | awk '\$2 != \"A\" {print \$3}' | grep -Ev '^((cu[A-Z][A-Za-z0-9_]*|gpuaccel_[a-z_]+)(@@GPUACCEL_1)?|dl(v?)sym@@?GLIBC_[0-9.]+)\$'"
    echo "unexpected: $output"
    [ -z "$output" ]
    nm -D --defined-only "$GA_LIB" | grep -q ' cuLaunchKernel_ptsz@@GPUACCEL_1$'
    nm -D --defined-only "$GA_LIB" | grep -q ' dlsym@@GLIBC_2.34$'
}

@test "no constructors: .init_array holds only the compiler's own entry" {
    echo 'int ga_empty;' > "$BATS_TEST_TMPDIR/empty.c"
    $GA_CC -shared -fPIC -o "$BATS_TEST_TMPDIR/empty.so" "$BATS_TEST_TMPDIR/empty.c"
    size_of() { readelf -SW "$1" | awk '$2 == ".init_array" {print $6}'; }
    echo "lib: $(size_of "$GA_LIB") empty: $(size_of "$BATS_TEST_TMPDIR/empty.so")"
    [ "$(size_of "$GA_LIB")" = "$(size_of "$BATS_TEST_TMPDIR/empty.so")" ]
}

@test "the library never writes to stdout" {
    run sh -c "env LD_PRELOAD='$GA_LIB' LD_LIBRARY_PATH='$FAKE_DIR' GPUACCEL_LOG=debug '$PROGS/door_getproc' '$PTX' 2>/dev/null"
    [ "$status" -eq 0 ]
    [[ "$output" != *gpuaccel* ]]
}

@test "GPUACCEL_LOG_FILE takes the messages" {
    log="$BATS_TEST_TMPDIR/ga.log"
    run env GPUACCEL_LOG=info GPUACCEL_LOG_FILE="$log" LD_PRELOAD="$GA_LIB" \
        LD_LIBRARY_PATH="$FAKE_DIR" "$PROGS/door_linked" "$PTX"
    [ "$status" -eq 0 ]
    [[ "$output" != *gpuaccel* ]]
    grep -q '^gpuaccel: calls:' "$log"
}

@test "fork while another thread is inside the library: the child runs CUDA afresh" {
    want=$(native "$PROGS/forker")
    for features in "GPUACCEL=1" "GPUACCEL_POOL=1 GPUACCEL_COALESCE=1 GPUACCEL_PROFILE=$BATS_TEST_TMPDIR/p"; do
        run timeout 60 env $features LD_PRELOAD="$GA_LIB" LD_LIBRARY_PATH="$FAKE_DIR" "$PROGS/forker"
        echo "$features: $output"
        [ "$status" -eq 0 ]
        [ "$output" = "$want" ]
    done
}

@test "the public API (gpuaccel.h) answers from the loaded library" {
    run native "$PROGS/api_probe"
    [ "$output" = "no library" ]
    run shim "$PROGS/api_probe"
    echo "$output"
    [ "$status" -eq 0 ]
    [[ "$output" =~ ^version=[0-9]+\.[0-9]+\.[0-9]+\ cuInit=1\ cuDriverGetVersion=2\ nosuch=0$ ]]
}

@test "libcuda opened, closed and opened again while the library is loaded" {
    want=$(native "$PROGS/reopen")
    [ "$(echo "$want" | grep -c ': 0 1$')" -eq 3 ]
    run shim "$PROGS/reopen"
    echo "$output"
    [ "$status" -eq 0 ]
    [ "$output" = "$want" ]
    run env GPUACCEL_POOL=1 GPUACCEL_COALESCE=1 LD_PRELOAD="$GA_LIB" LD_LIBRARY_PATH="$FAKE_DIR" "$PROGS/reopen"
    [ "$output" = "$want" ]
}

@test "secure execution (AT_SECURE): no variable is read, pure pass-through, no file written" {
    steer=(GPUACCEL_POOL=1 GPUACCEL_COALESCE=1 GPUACCEL_GRAPHS=1 GPUACCEL_LOG=debug
        GPUACCEL_LOG_FILE="$BATS_TEST_TMPDIR/log" GPUACCEL_PROFILE="$BATS_TEST_TMPDIR/prof")
    want=$(native "$PROGS/door_dlsym" "$PTX" 2>&1)
    # Control: the same environment steers an ordinary process (log and profile written).
    run env "${steer[@]}" LD_PRELOAD="$GA_LIB" LD_LIBRARY_PATH="$FAKE_DIR" "$PROGS/door_dlsym" "$PTX"
    [ "$status" -eq 0 ]
    grep -q '^gpuaccel: pool: hits=' "$BATS_TEST_TMPDIR/log"
    ls "$BATS_TEST_TMPDIR"/prof* >/dev/null
    rm -f "$BATS_TEST_TMPDIR"/log "$BATS_TEST_TMPDIR"/prof*
    run env "${steer[@]}" LD_PRELOAD="$PROGS/libsecure.so:$GA_LIB" LD_LIBRARY_PATH="$FAKE_DIR" \
        "$PROGS/door_dlsym" "$PTX"
    echo "$output"
    [ "$status" -eq 0 ]
    [ "$output" = "$want" ]
    [ ! -e "$BATS_TEST_TMPDIR/log" ]
    run ! ls "$BATS_TEST_TMPDIR"/prof*
}
