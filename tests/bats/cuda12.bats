#!/usr/bin/env bats
# cuda12.bats - the library on CUDA 12.x drivers: the fake driver made older
# (FAKECUDA_DRIVER_VERSION) reports that release and lacks every entry point
# introduced after it. Programs get what they get natively (the same results,
# the same missing entry points through every door), features that need a
# newer entry point switch themselves off with one warning, and PTX is lowered
# to that release's ISA.
load helpers

setup() { setup_fake; }

@test "12.x drivers: every door gives the native results, with the defaults and with every feature on" {
    for v in 12000 12040 12090; do
        export FAKECUDA_DRIVER_VERSION=$v
        for prog in door_getproc door_dlsym door_linked; do
            like_native -- "$PROGS/$prog" "$PTX"
            has_words 'result ok=1' "$want"
            like_native GPUACCEL_POOL=1 GPUACCEL_COALESCE=1 GPUACCEL_GRAPHS=1 -- "$PROGS/$prog" "$PTX" pt
        done
    done
}

@test "a 13.0-only entry point is missing on a 12.4 driver through both doors, exactly as natively" {
    export FAKECUDA_DRIVER_VERSION=12040
    like_native -- "$PROGS/door_newer"
    echo "$want" | grep -qx 'driver=12040'
    echo "$want" | grep -qx 'dlsym:cuCtxSynchronize_v2=missing'
    echo "$want" | grep -qx 'global:cuCtxSynchronize_v2=missing' # not the library's own export
    echo "$want" | grep -qx 'dlsym:cuEventElapsedTime_v2=missing' # 12.8
    # Asking for the 13.0 ABI of a 12.4 driver is an invalid value; at 12.4 it is the old one.
    echo "$want" | grep -qx 'getproc:cuCtxSynchronize@13000=r=1 status=-1 pfn=untouched'
    echo "$want" | grep -qx 'getproc:cuCtxSynchronize@12040=r=0 status=0 pfn=called r=0'
    echo "$want" | grep -qx 'getproc:cuFuncGetName@12000=r=500 status=2 pfn=null' # too new for 12.0
    # The old variant went through its wrapper; the 13.0 one was never called.
    [ "$(echo "$output" | calls_of cuCtxSynchronize)" -eq 2 ]
    [ "$(echo "$output" | calls_of cuCtxSynchronize_v2)" -eq 0 ]
    no_line 'gpuaccel: warning'
}

@test "the same lookups on a 12.0 and a 13.0 driver: native answers, and the 13.0 variant wrapped" {
    FAKECUDA_DRIVER_VERSION=12000 like_native -- "$PROGS/door_newer"
    echo "$want" | grep -qx 'getproc:cuFuncGetName@12000=r=500 status=1 pfn=null' # unknown to 12.0
    like_native -- "$PROGS/door_newer"
    echo "$want" | grep -qx 'dlsym:cuCtxSynchronize_v2=found r=0'
    echo "$want" | grep -qx 'getproc:cuCtxSynchronize@13000=r=0 status=0 pfn=called r=0'
    [ "$(echo "$output" | calls_of cuCtxSynchronize_v2)" -eq 4 ]
}

@test "a feature the driver is too old for is switched off with one warning; the others serve" {
    export FAKECUDA_DRIVER_VERSION=12000
    like_native GPUACCEL_POOL=1 GPUACCEL_GRAPHS=1 GPUACCEL_TUNER="$BATS_TEST_TMPDIR/t" -- \
        "$PROGS/graphs_prog" "$PTX"
    [ "$(echo "$output" | grep -c '^gpuaccel: warning:')" -eq 3 ]
    [ "$(echo "$output" | grep -c '^gpuaccel: warning: this driver (CUDA 12.0) has no cuFuncGetParamInfo, which GPUACCEL_GRAPHS needs: the feature is off$')" -eq 1 ]
    [ "$(echo "$output" | grep -c '^gpuaccel: warning: this driver (CUDA 12.0) has no cuKernelGetName, which GPUACCEL_KERNELS needs')" -eq 1 ]
    [ "$(echo "$output" | grep -c '^gpuaccel: warning: this driver (CUDA 12.0) has no cuFuncGetName, which GPUACCEL_TUNER needs')" -eq 1 ]
    echo "$output" | grep -q '^gpuaccel: pool: hits=[1-9]'
    no_line '^gpuaccel: graphs:'
    [ ! -e "$BATS_TEST_TMPDIR/t" ]
}

@test "a 12.4 driver has what graphs, kernels and the tuner need: no warning, each of them acts" {
    export FAKECUDA_DRIVER_VERSION=12040
    like_native GPUACCEL_GRAPHS=1 -- "$PROGS/graphs_prog" "$PTX"
    no_line '^gpuaccel: warning'
    echo "$output" | grep -q '^gpuaccel: graphs: segments=[0-9]* built=[1-9][0-9]* replays=[1-9]'
    # The tuner times with cuEventElapsedTime, cuEventElapsedTime_v2 being 12.8's.
    like_native GPUACCEL_TUNER="$BATS_TEST_TMPDIR/t" -- "$PROGS/door_getproc" "$PTX"
    grep -q '^add sm_90 32,1,1 128,1,1 0 -> ' "$BATS_TEST_TMPDIR/t"
    like_native GPUACCEL_PROFILE="$BATS_TEST_TMPDIR/p" GPUACCEL_PROFILE_KERNELS=1 -- \
        "$PROGS/door_getproc" "$PTX"
    grep -q 'launches .* us GPU, .* mean  add$' "$BATS_TEST_TMPDIR/p.txt"
}

@test "PTX for a newer toolkit on a 12.4 driver: loaded again as .version 8.4, that release's ISA" {
    export FAKECUDA_DRIVER_VERSION=12040
    run native "$PROGS/ptx_prog"
    [ "$output" = "module old=222 new=222 library old=222 new=222" ]
    run env GPUACCEL_LOG=info LD_PRELOAD="$GA_LIB" LD_LIBRARY_PATH="$FAKE_DIR" "$PROGS/ptx_prog"
    echo "$output"
    [ "$status" -eq 0 ]
    echo "$output" | grep -qx 'module old=0 new=222 library old=0 new=222'
    [ "$(echo "$output" | grep -c 'loaded as .version 8.4 ')" -eq 2 ]
    FAKECUDA_DRIVER_VERSION=12070 run env GPUACCEL_LOG=info LD_PRELOAD="$GA_LIB" \
        LD_LIBRARY_PATH="$FAKE_DIR" "$PROGS/ptx_prog"
    [ "$(echo "$output" | grep -c 'loaded as .version 8.6 ')" -eq 2 ]
}
