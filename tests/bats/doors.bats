#!/usr/bin/env bats
# doors.bats - each of the three doors leads through the library: the program's
# results and error codes are unchanged, and the library counted its calls.
load helpers

setup() { setup_fake; }

# run PROG under both, compare stdout, keep the library's stderr in $shim_err
compare() {
    local native_out shim_out
    native_out=$(native "$@" 2>/dev/null)
    shim_out=$(GPUACCEL_LOG=info shim "$@" 2>"$BATS_TEST_TMPDIR/err")
    shim_err=$(cat "$BATS_TEST_TMPDIR/err")
    echo "native: $native_out"
    echo "shim:   $shim_out"
    echo "stderr: $shim_err"
    [ -n "$native_out" ]
    [ "$native_out" = "$shim_out" ]
    has_words 'result ok=1' "$native_out"
}

@test "dlsym door: exact ELF names through dlopen/dlsym (cudarc, ctypes)" {
    compare "$PROGS/door_dlsym" "$PTX"
    [ "$(echo "$shim_err" | calls_of cuLaunchKernel)" -eq 22 ]
    [ "$(echo "$shim_err" | calls_of cuMemAlloc_v2)" -eq 2 ]
    [ "$(echo "$shim_err" | calls_of cuMemcpyDtoH_v2)" -eq 258 ]
    [ "$(echo "$shim_err" | calls_of cuMemFree_v2)" -eq 3 ]
}

@test "dlsym door: the per-thread-stream variant is its own entry point" {
    compare "$PROGS/door_dlsym" "$PTX" pt
    [ "$(echo "$shim_err" | calls_of cuLaunchKernel_ptsz)" -eq 22 ]
    [ "$(echo "$shim_err" | calls_of cuLaunchKernel)" -eq 0 ]
}

@test "cuGetProcAddress door: base names map to the exact variant (cudart)" {
    compare "$PROGS/door_getproc" "$PTX"
    [ "$(echo "$shim_err" | calls_of cuLaunchKernel)" -eq 22 ]
    [ "$(echo "$shim_err" | calls_of cuMemAlloc_v2)" -eq 2 ]
    [ "$(echo "$shim_err" | calls_of cuGetProcAddress_v2)" -ge 16 ]
}

@test "cuGetProcAddress door: the per-thread flag yields _ptsz/_ptds wrappers" {
    compare "$PROGS/door_getproc" "$PTX" pt
    [ "$(echo "$shim_err" | calls_of cuLaunchKernel_ptsz)" -eq 22 ]
    [ "$(echo "$shim_err" | calls_of cuMemcpyDtoH_v2_ptds)" -eq 258 ]
    [ "$(echo "$shim_err" | calls_of cuMemcpyDtoH_v2)" -eq 0 ]
}

@test "linked door: a -lcuda program calls the exported wrappers" {
    compare "$PROGS/door_linked" "$PTX"
    [ "$(echo "$shim_err" | calls_of cuLaunchKernel_ptsz)" -eq 22 ]
    [ "$(echo "$shim_err" | calls_of cuMemcpyHtoD_v2_ptds)" -eq 1 ]
    [ "$(echo "$shim_err" | calls_of cuInit)" -eq 1 ]
}

@test "error parity: bad calls return the driver's own codes" {
    compare "$PROGS/door_getproc" "$PTX"
    native "$PROGS/door_getproc" "$PTX" | grep -qx 'codes oversized_block=1 huge_alloc=2 double_free=1 bad_pointer=1'
}

@test "GPUACCEL=0 is a pure pass-through: nothing counted, nothing said" {
    run env GPUACCEL=0 GPUACCEL_LOG=info LD_PRELOAD="$GA_LIB" LD_LIBRARY_PATH="$FAKE_DIR" \
        "$PROGS/door_getproc" "$PTX" pt
    [ "$status" -eq 0 ]
    [[ "$output" != *"gpuaccel: calls:"* ]]
    has_words 'result ok=1'
}

@test "no feature on: the doors hand out the driver's own entry points; a feature or the call log brings the wrappers back" {
    local off=() f
    for f in $(toggled_features); do off+=("GPUACCEL_$(echo "$f" | tr 'a-z' 'A-Z')=0"); done
    run env "${off[@]}" LD_PRELOAD="$GA_LIB" LD_LIBRARY_PATH="$FAKE_DIR" "$PROGS/door_where"
    echo "off: $output"
    [ "$status" -eq 0 ]
    [ "$output" = "dlsym=libcuda.so.1 getproc=libcuda.so.1" ]
    for setting in GPUACCEL_POOL=1 GPUACCEL_LOG=info "GPUACCEL_PROFILE=$BATS_TEST_TMPDIR/p"; do
        run env $setting LD_PRELOAD="$GA_LIB" LD_LIBRARY_PATH="$FAKE_DIR" "$PROGS/door_where"
        echo "$setting: $output"
        [ "$status" -eq 0 ]
        [[ "$output" == *"dlsym=libgpuaccel.so"*" getproc=libgpuaccel.so"* ]]
    done
}

@test "pool on: same results, allocations served from the cache" {
    export GPUACCEL_POOL=1
    compare "$PROGS/door_getproc" "$PTX"
    unset GPUACCEL_POOL
    echo "$shim_err" | grep -q '^gpuaccel: pool: hits=[0-9]* (ordered after their fence: [0-9]*) misses=[1-9]'
}

@test "coalesce on: same results (reads after writes see the writes), reads served from windows" {
    export GPUACCEL_COALESCE=1
    compare "$PROGS/door_getproc" "$PTX"
    unset GPUACCEL_COALESCE
    echo "$shim_err" | grep -q '^gpuaccel: coalesce: hits=[1-9]'
}

@test "coalesce: memory a network card may write (SYNC_MEMOPS set, or exported as a dma-buf) is never served; plain memory is" {
    # late: marked after a read that a window may hold (the mark must drop it)
    for mode in marked dmabuf late; do
        like_native GPUACCEL_COALESCE=1 -- "$PROGS/dma_prog" "$PTX" "$mode"
        [[ "$output" == *"second=feedbeef"* ]]
        echo "$output" | grep -q '^gpuaccel: coalesce: hits=0 '
    done
    # the same reads of plain memory: the second is served from the window the
    # first filled (which is why such memory must be marked or exported)
    run env GPUACCEL_COALESCE=1 GPUACCEL_LOG=info LD_PRELOAD="$GA_LIB" LD_LIBRARY_PATH="$FAKE_DIR" \
        "$PROGS/dma_prog" "$PTX" plain
    echo "$output"
    [ "$status" -eq 0 ]
    echo "$output" | grep -q '^gpuaccel: coalesce: hits=1 '
}

@test "coalesce: async reads on the default stream, each followed by its sync, are served (the .item() pattern)" {
    like_native GPUACCEL_COALESCE=1 -- "$PROGS/item_prog" "$PTX"
    hits=$(echo "$output" | sed -n 's/^gpuaccel: coalesce: hits=\([0-9]*\).*/\1/p')
    [ "$hits" -ge 1000 ] # of 2048 reads
}

@test "every feature on at once: same results" {
    export GPUACCEL_POOL=1 GPUACCEL_COALESCE=1 GPUACCEL_GRAPHS=1
    compare "$PROGS/door_linked" "$PTX"
    unset GPUACCEL_POOL GPUACCEL_COALESCE GPUACCEL_GRAPHS
}

@test "graphs on: repeated sequences replayed as graphs, every result unchanged" {
    like_native GPUACCEL_GRAPHS=1 -- timeout 120 "$PROGS/graphs_prog" "$PTX"
    [ "$(echo "$want" | grep -cw 'ok=1')" -eq 6 ]
    echo "$output" | grep -q '^gpuaccel: graphs: segments=[0-9]* built=[1-9][0-9]* replays=[1-9]'
}

@test "graphs: a sequence repeated with no flush point at all is found and replayed" {
    like_native GPUACCEL_GRAPHS=1 -- timeout 120 "$PROGS/graphs_prog" "$PTX" unflushed
    [ "$want" = "unflushed ok=1" ]
    echo "$output" | grep -q '^gpuaccel: graphs: .* built=[1-9][0-9]* replays=[1-9]'
}

@test "graphs: cuLaunchKernelEx with no attribute is held and replayed, with one it is not" {
    like_native GPUACCEL_GRAPHS=1 -- timeout 120 "$PROGS/graphs_prog" "$PTX" ex
    [ "$want" = "$(printf 'ex ok=1\nex-attributed ok=1')" ]
    echo "$output" | grep -q '^gpuaccel: graphs: .* built=[1-9][0-9]* replays=[1-9]'
}

@test "graphs with the pool and coalescing: results unchanged" {
    want=$(native "$PROGS/graphs_prog" "$PTX")
    run env GPUACCEL_GRAPHS=1 GPUACCEL_POOL=1 GPUACCEL_COALESCE=1 LD_PRELOAD="$GA_LIB" \
        LD_LIBRARY_PATH="$FAKE_DIR" timeout 120 "$PROGS/graphs_prog" "$PTX"
    [ "$status" -eq 0 ]
    [ "$output" = "$want" ]
}

# The code identity of kernel $1 in the test kernels (gpuaccel kernels ids).
code_of() {
    "$GA_BUILD/tools/gpuaccel" kernels ids "$PTX" "$1" | sed -n "s/^$1 \(code=[0-9a-f]*\)$/\1/p"
}

@test "kernels on: a user replacement for the code it lists and the same ABI is swapped" {
    printf 'not a real fatbin' > "$BATS_TEST_TMPDIR/user.fatbin"
    add=$(code_of add) fill=$(code_of fill)
    [ -n "$add" ]
    [ -n "$fill" ]
    [ "$add" != "$fill" ]
    cat > "$BATS_TEST_TMPDIR/user.table" <<TABLE
# user replacements (the fake driver's library kernels)
add   ga_add        grid=any      $add
fill  ga_wrong_abi  grid=program  $fill
this line is wrong
TABLE
    like_native GPUACCEL_KERNELS=1 \
        GPUACCEL_KERNELS_EXTRA="$BATS_TEST_TMPDIR/user.fatbin:$BATS_TEST_TMPDIR/user.table" \
        -- "$PROGS/door_getproc" "$PTX"
    echo "$output" | grep -qF "user.table:4: expected '<original> <replacement> grid=program|grid=any code=<16 hex digits>... [writes=P:Q*S...]'"
    echo "$output" | grep -q '^gpuaccel: kernels: fill not swapped: ga_wrong_abi takes other parameters'
    echo "$output" | grep -qx 'gpuaccel: kernels: swapped=19 other_code=0 unidentified=0 abi_mismatch=1 denied=0 failed=0'
    # add's rule for fill's code (the same name and parameters, other code): never swapped
    printf 'add ga_add grid=any %s\nfill ga_add grid=any\n' "$fill" > "$BATS_TEST_TMPDIR/user.table"
    like_native GPUACCEL_KERNELS=1 \
        GPUACCEL_KERNELS_EXTRA="$BATS_TEST_TMPDIR/user.fatbin:$BATS_TEST_TMPDIR/user.table" \
        -- "$PROGS/door_getproc" "$PTX"
    echo "$output" | grep -q "^gpuaccel: kernels: add not swapped: its code ($add) is not the code ga_add was verified against"
    echo "$output" | grep -q "^gpuaccel: kernels: .*user.table: fill lists no code= identity: never swapped"
    echo "$output" | grep -qx 'gpuaccel: kernels: swapped=0 other_code=1 unidentified=0 abi_mismatch=0 denied=0 failed=0'
}

@test "kernels: GPUACCEL_KERNELS_DENY keeps a kernel original; a bad EXTRA is reported" {
    printf 'x' > "$BATS_TEST_TMPDIR/user.fatbin"
    printf 'add ga_add grid=program %s\n' "$(code_of add)" > "$BATS_TEST_TMPDIR/user.table"
    run env GPUACCEL_KERNELS=1 GPUACCEL_LOG=info GPUACCEL_KERNELS_DENY='a*' \
        GPUACCEL_KERNELS_EXTRA="$BATS_TEST_TMPDIR/user.fatbin:$BATS_TEST_TMPDIR/user.table" \
        LD_PRELOAD="$GA_LIB" LD_LIBRARY_PATH="$FAKE_DIR" "$PROGS/door_getproc" "$PTX"
    [ "$status" -eq 0 ]
    echo "$output" | grep -q 'kernels: add not swapped: GPUACCEL_KERNELS_DENY'
    run env GPUACCEL_KERNELS=1 GPUACCEL_KERNELS_EXTRA=nocolon LD_PRELOAD="$GA_LIB" \
        LD_LIBRARY_PATH="$FAKE_DIR" "$PROGS/door_getproc" "$PTX"
    [ "$status" -eq 0 ]
    echo "$output" | grep -q "GPUACCEL_KERNELS_EXTRA='nocolon' is not valid: expected FATBIN:TABLE"
    run env GPUACCEL_KERNELS=1 GPUACCEL_KERNELS_EXTRA=/no/such.fatbin:/no/table \
        LD_PRELOAD="$GA_LIB" LD_LIBRARY_PATH="$FAKE_DIR" "$PROGS/door_getproc" "$PTX"
    [ "$status" -eq 0 ]
    echo "$output" | grep -q "GPUACCEL_KERNELS_EXTRA: cannot read '/no/such.fatbin'"
}

@test "tune on: a table entry rewrites a launch, results unchanged; other devices and launch bounds respected" {
    cat > "$BATS_TEST_TMPDIR/tune.table" <<'TABLE'
# add: bounds-checked 1-D, 32 blocks of 128 -> 16 of 256 (same threads)
add  *      32 128 0 -> 16 256 threads
# fill: its __launch_bounds__ (256) forbids 512
fill *      16 256 0 -> 8 512 threads
# another device: ignored
add  sm_80  32 128 0 -> 8 512 threads
add  sm_90  oops
TABLE
    like_native GPUACCEL_TUNE=1 GPUACCEL_TUNE_TABLE="$BATS_TEST_TMPDIR/tune.table" \
        -- "$PROGS/door_getproc" "$PTX"
    echo "$output" | grep -q 'tune.table:7: expected'
    echo "$output" | grep -q '^gpuaccel: tune: rewritten=19 '
}

@test "tune: an unreadable table is reported once, nothing rewritten" {
    run env GPUACCEL_TUNE=1 GPUACCEL_TUNE_TABLE=/no/such/table LD_PRELOAD="$GA_LIB" \
        LD_LIBRARY_PATH="$FAKE_DIR" "$PROGS/door_getproc" "$PTX"
    [ "$status" -eq 0 ]
    [ "$(echo "$output" | grep -c "GPUACCEL_TUNE_TABLE: cannot read '/no/such/table'")" -eq 1 ]
}

@test "huge and corrupt tables: warnings naming the variable or file and line, output as native" {
    truncate -s 17M "$BATS_TEST_TMPDIR/huge"
    # A line cut short, then binary junk (the fuzzers try random bytes at length).
    printf 'add sm_90 32,1,1 128,1,1 0 -> 4,1\n\377\376junk\001 -> \n' >"$BATS_TEST_TMPDIR/corrupt"
    like_native GPUACCEL_TUNE=1 GPUACCEL_TUNE_TABLE="$BATS_TEST_TMPDIR/huge" -- "$PROGS/door_getproc" "$PTX"
    [ "$(echo "$output" | grep -c "GPUACCEL_TUNE_TABLE: cannot read '$BATS_TEST_TMPDIR/huge' as a table (missing, unreadable or over 16 MiB)")" -eq 1 ]
    like_native GPUACCEL_TUNE=1 GPUACCEL_TUNE_TABLE="$BATS_TEST_TMPDIR/corrupt" -- "$PROGS/door_getproc" "$PTX"
    [ "$(echo "$output" | grep -c "^gpuaccel: warning: $BATS_TEST_TMPDIR/corrupt:[12]: expected '<kernel> ")" -eq 2 ]
    no_line '^gpuaccel: tune: rewritten=[1-9]'
    like_native GPUACCEL_KERNELS=1 GPUACCEL_KERNELS_EXTRA="$BATS_TEST_TMPDIR/huge:$BATS_TEST_TMPDIR/huge" \
        -- "$PROGS/door_getproc" "$PTX"
    [ "$(echo "$output" | grep -c "GPUACCEL_KERNELS_EXTRA: cannot read '$BATS_TEST_TMPDIR/huge'")" -eq 1 ]
}

@test "after a sticky fault every call returns the driver's error, with every feature on" {
    like_native GPUACCEL_POOL=1 GPUACCEL_COALESCE=1 GPUACCEL_GRAPHS=1 -- "$PROGS/fault_prog" "$PTX"
    echo "native: $want"
    [[ "$want" == "fault=0 sync=700 alloc=700 read=700 launch=700,700,700,700,700,700,700,700 free=700 twice=700 reset=0 after=0 "* ]]
    echo "$output" | grep -qw '^gpuaccel: the driver returned sticky error 700'
    echo "$output" | grep -q '^gpuaccel: pool: hits=[1-9]' # each feature served before the fault
    echo "$output" | grep -q '^gpuaccel: coalesce: hits=[1-9]'
    echo "$output" | grep -q '^gpuaccel: graphs: .*replays=[1-9]'
}

@test "out of memory mid-run (a 40 MiB device): the pool grants what the driver grants, refuses what it refuses" {
    export FAKECUDA_MEM=$((40 << 20))
    like_native GPUACCEL_POOL=1 -- "$PROGS/oom_prog"
    # Natively some allocations fail (code 2); the same ones, and only they, fail
    # with the pool, whose cached blocks would otherwise hold the memory they need.
    [ "$(echo "$want" | grep -c '^alloc .* 2$')" -ge 3 ]
    echo "$want" | grep -q '^checked=[1-9][0-9]* bad=0 free_at_exit=41943040$'
    echo "$output" | grep -Eq '^gpuaccel: pool: hits=[1-9].* releases=[1-9]'
}

@test "an injected allocation failure: passed through as is; the pool retries it once" {
    export FAKECUDA_MEM=$((1 << 30)) FAKECUDA_FAULT=alloc:5
    like_native GPUACCEL_POOL=0 -- "$PROGS/oom_prog"
    [ "$(echo "$want" | grep '^alloc .* 2$')" = "alloc 4 16777216 2" ]
    # With the pool the fifth driver call is its own, and a failed one is retried
    # after the cache is given back: the program sees every allocation succeed.
    run env GPUACCEL_POOL=1 GPUACCEL_LOG=info LD_PRELOAD="$GA_LIB" LD_LIBRARY_PATH="$FAKE_DIR" \
        "$PROGS/oom_prog"
    echo "$output"
    [ "$status" -eq 0 ]
    no_line '^alloc .* 2$'
    echo "$output" | grep -q '^checked=37 bad=0 '
    echo "$output" | grep -Eqw '^gpuaccel: pool: .*releases=1'
}

@test "stress: 16 threads with every feature on, each result checked against a host model" {
    # A fresh seed each run (printed, to replay a failure); GA_STRESS_SECONDS for longer.
    seed=$(od -An -N8 -tu8 /dev/urandom | tr -d ' ')
    echo "seed $seed"
    # Coalescing alone first: most reads are served then. Before fills were
    # owned by their filler until enqueued, this failed 7 runs in 8 (another
    # thread's sync freed a slot still being filled).
    like_native GPUACCEL_COALESCE=1 -- "$PROGS/stress_prog" "$PTX" "${GA_STRESS_SECONDS:-3}" 16 "$seed"
    [ "$want" = "stress ok=1 threads=16" ]
    like_native GPUACCEL_POOL=1 GPUACCEL_COALESCE=1 GPUACCEL_GRAPHS=1 -- \
        "$PROGS/stress_prog" "$PTX" "${GA_STRESS_SECONDS:-3}" 16 "$seed"
    [ "$want" = "stress ok=1 threads=16" ]
    # Every feature served while the threads ran.
    echo "$output" | grep -Eq '^gpuaccel: pool: hits=[1-9]'
    echo "$output" | grep -Eq '^gpuaccel: coalesce: hits=[1-9]'
    echo "$output" | grep -Eq '^gpuaccel: graphs: .*replays=[1-9]'
}

@test "PTX above the driver's ISA: loaded again with the highest .version it takes; code that needs the newer ISA still gets the driver's error" {
    export FAKECUDA_PTX_MAX=9.0
    run native "$PROGS/ptx_prog"
    echo "native: $output"
    [ "$output" = "module old=222 new=222 library old=222 new=222" ]
    run env GPUACCEL_LOG=info LD_PRELOAD="$GA_LIB" LD_LIBRARY_PATH="$FAKE_DIR" "$PROGS/ptx_prog"
    echo "library: $output"
    [ "$status" -eq 0 ]
    echo "$output" | grep -qx 'module old=0 new=222 library old=0 new=222'
    [ "$(echo "$output" | grep -c 'gpuaccel: PTX with a .version above this driver.s loaded as .version 9.0')" -eq 2 ]
    run env GPUACCEL_PTX_RETRY=0 LD_PRELOAD="$GA_LIB" LD_LIBRARY_PATH="$FAKE_DIR" "$PROGS/ptx_prog"
    [ "$output" = "module old=222 new=222 library old=222 new=222" ]
}
