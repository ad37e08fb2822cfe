#!/usr/bin/env bats
# harness.bats - the GPU tests' harness (tests/gpu/common.sh) and the GPU
# scripts themselves, run here without a GPU. nvidia-smi is a stub that lists
# one; the CUDA programs a script runs are small shell scripts printing what a
# passing run prints (natively, and under the library: LD_PRELOAD names
# libgpuaccel), and the C programs of tests/progs run for real on the fake
# driver. The plain stubs must pass; each failure planted in a stub (a check
# line dropped, ok=0 with exit 0, silence, a wrong digest, a crash or exit 1
# under the library, a wrong fault code) must fail the script, saying what.
load helpers
bats_require_minimum_version 1.5.0 # run -N

setup() {
    setup_fake
    T=$BATS_TEST_TMPDIR
    B=$T/build # stands for GA_BUILD: tests/gpu, tests/progs, tests/apps/prover
    stub "$T/bin/nvidia-smi" 'echo "GPU 0: stub GPU (UUID: GPU-stub)"'
}

# stub PATH BODY: an executable sh script running BODY, in which $LIB is 1
# under the library and 0 natively (PATH replaced, never written through: it
# may be a link to a real program).
stub() {
    mkdir -p "$(dirname "$1")"
    rm -f "$1"
    printf '#!/bin/sh\ncase "${LD_PRELOAD:-}" in *libgpuaccel*) LIB=1 ;; *) LIB=0 ;; esac\n%s\n' \
        "$2" >"$1"
    chmod +x "$1"
}

# lines TEXT...: a stub body printing each TEXT as a line.
lines() {
    local t
    for t; do printf 'echo "%s"\n' "$t"; done
}

# real PROG: tests/progs/PROG, the built one (run on the fake driver), in $B.
real() {
    mkdir -p "$B/tests/progs"
    ln -sf "$PROGS/$1" "$B/tests/progs/$1"
}

# gpu_script NAME [VAR=VALUE...]: tests/gpu/NAME.sh (or tests/corpus) on the
# stubs, its output in $output; the stub nvidia-smi first on PATH.
gpu_script() {
    local s=$GA_SRC/tests/gpu/$1.sh
    [ "$1" != corpus ] || s=$GA_SRC/tests/corpus/corpus.sh
    shift
    run env PATH="$T/bin:$PATH" GA_BUILD="$B" NVCC=nvcc LD_LIBRARY_PATH="$FAKE_DIR" "$@" sh "$s"
    echo "$output"
}

# passes / fails_with TEXT: the script's verdict (a FAIL line holding TEXT).
passes() {
    [ "$status" -eq 0 ] || { echo "expected a pass, got exit $status"; return 1; }
    echo "$output" | grep -q '^PASS: '
}
fails_with() {
    [ "$status" -eq 1 ] || { echo "expected exit 1, got $status"; return 1; }
    echo "$output" | grep '^FAIL: ' | grep -qF -- "$1" || { echo "no FAIL line with: $1"; return 1; }
}

# The programs' passing output.
POOL_LINES=(
    "slow_free ok=1" "threads ok=1" "big_alloc ok=1" "meminfo ok=1" "ipc ok=1" "contexts ok=1"
    "no_context get=0,0 none=1,1 free=0,0 ok=1")
pool_stub() { # [BODY]: pool_test, passing, with BODY (a planted failure) after its lines
    stub "$B/tests/gpu/pool_test" "$(lines "${POOL_LINES[@]}")
[ \$LIB = 0 ] || echo 'gpuaccel: pool: hits=5 (ordered after their fence: 0) misses=2' >&2
${1:-}"
}
# The prover: a digest of its arguments, the same natively, under the library
# and from --reference (what a correct GPU run gives); "verify: ... accepted".
prover_stub() { # [BODY]: BODY runs first ($ref is 1 for --reference) and may print another digest and exit
    stub "$B/tests/apps/prover/prover" "ref=0; case \" \$* \" in *' --reference '*) ref=1 ;; esac
args=\$(echo \" \$* \" | sed 's/ --verify / /; s/ --reference / /')
${1:-}
case \" \$* \" in *' --verify '*) echo 'verify: 1 proof(s) accepted' >&2 ;; esac
[ \$LIB = 0 ] || echo 'gpuaccel: calls: cuLaunchKernel=150 cuMemcpyDtoH_v2=80' >&2
printf 'digest: %016x\n' \"\$(echo \"\$args\" | cksum | cut -d' ' -f1)\""
}
cudart_stub() {
    stub "$B/tests/gpu/cudart_static" "$(lines 'result ok=1 sum=123' 'codes oversized_block=1 huge_alloc=2 bad_free=1')"
}
other_stubs() { # what compare_other_programs runs
    stub "$B/tests/gpu/hostptr_test" "$(lines 'device-dst: sum=4162870 ok=1' 'device-dst-reread: sum=1389660 ok=1' 'device-src: sum=12482560 ok=1' \
        'managed: sum=4162870 ok=1' 'mapped: sum=4162870 device-view=4162870 ok=1' \
        'registered: sum=4162870 ok=1' 'zero: malloc0=0 ptr=null' 'past-end: no error ok=1')"
    stub "$B/tests/gpu/capture_test" "$(lines 'mixed ok=1' 'modes ok=1' 'ptds ok=1' 'thread ok=1' \
        'invalid ok=1' 'churn ok=1')"
    cudart_stub
    real capture_prog
    prover_stub
}

@test "compare_runs: a program that passes its checks the same way passes" {
    stub "$T/p" "$(lines 'a ok=1' 'b value=3 ok=1')"
    run sh -c '. "$GA_SRC/tests/gpu/common.sh"; compare_runs "$1" && expect_ok a b' sh "$T/p"
    echo "$output"
    [ "$status" -eq 0 ]
    [[ "$output" == "ok: $T/p -> a ok=1 b value=3 ok=1 "* ]]
}

@test "compare_runs: silence, no check line, ok=0, a difference, exit 1, a signal: each fails, saying which" {
    t() { # BODY TEXT: compare_runs on a stub running BODY fails with TEXT
        stub "$T/p" "$1"
        run sh -c '. "$GA_SRC/tests/gpu/common.sh"; compare_runs "$1"; echo "not failed"' sh "$T/p"
        echo "$output"
        [ "$status" -eq 1 ] && [[ "$output" == *"FAIL: $2"* ]] || { echo "wanted: FAIL: $2"; return 1; }
    }
    t ':' "no output natively"
    t 'echo "sum=1 value=2"' "no check line"
    t 'echo "a ok=1"; echo "b ok=0"' "a check fails natively: $T/p: b ok=0"
    t 'echo "a ok=$LIB"' "a check fails natively"
    t 'echo "a ok=1 x=$LIB"' "outputs differ"
    t 'echo "a ok=1"; exit $LIB' "library run failed (exit 1)"
    t 'echo "a ok=1"; [ $LIB = 0 ] || kill -SEGV $$' "library run failed (exit 139)"
    t 'echo "a ok=1"; exit 3' "native run failed (exit 3)"
}

@test "compare_runs --reference: the library must print the reference, even when it agrees with native" {
    stub "$T/p" 'echo "digest: 00000000000000aa"'
    run sh -c '. "$GA_SRC/tests/gpu/common.sh"; compare_runs --reference "digest: 00000000000000aa" "$1"' sh "$T/p"
    [ "$status" -eq 0 ]
    run sh -c '. "$GA_SRC/tests/gpu/common.sh"; compare_runs --reference "digest: 00000000000000bb" "$1"' sh "$T/p"
    echo "$output"
    [ "$status" -eq 1 ]
    [[ "$output" == *"FAIL: the output is not the reference's"* ]]
}

@test "compare_runs --checks: another kind of check line" {
    stub "$T/p" 'echo "launch=0 sync=700"'
    run sh -c '. "$GA_SRC/tests/gpu/common.sh"; compare_runs "$1"' sh "$T/p"
    [ "$status" -eq 1 ]
    run sh -c '. "$GA_SRC/tests/gpu/common.sh"; compare_runs --checks "^launch=" "$1"' sh "$T/p"
    [ "$status" -eq 0 ]
}

@test "expect_ok: each name needs its own ok=1 line" {
    run sh -c '. "$GA_SRC/tests/gpu/common.sh"; shim_out="$1"; expect_ok "size=1 api" threads' sh \
        "$(printf 'size=1 api off=0 ok=1\nsize=10 api-x off=0 ok=1\nthreads ok=1')"
    [ "$status" -eq 0 ]
    for missing in "size=10 api" "size=1 api-x" thread ipc; do
        run sh -c '. "$GA_SRC/tests/gpu/common.sh"; shim_out="$1"; expect_ok "$2"' sh \
            "$(printf 'size=1 api off=0 ok=1\nsize=10 api-x off=0 ok=1\nthreads ok=1\nipc ok=0')" "$missing"
        echo "$missing: $output"
        [ "$status" -eq 1 ]
        [[ "$output" == "FAIL: no line '$missing ... ok=1'"* ]]
    done
}

@test "library_failed: a signal whatever native did, a non-zero exit where native exited 0" {
    lf() { sh -c '. "$GA_SRC/tests/gpu/common.sh"; library_failed "$1" "$2"' sh "$@"; }
    lf 0 1
    lf 0 139
    lf 1 139
    lf 139 139
    lf 0 124
    run ! lf 0 0
    run ! lf 1 1
    run ! lf 2 0
}

@test "require_gpu and require_built: a skip says a reason that holds; a missing program with nvcc fails" {
    stub "$T/none/nvidia-smi" 'echo "No devices were found"'
    run env PATH="$T/none:$PATH" sh -c '. "$GA_SRC/tests/gpu/common.sh"; require_gpu x'
    [ "$status" -eq 77 ]
    [ "$output" = "SKIP: no GPU on this machine: nvidia-smi lists none (x)" ]
    run sh -c '. "$GA_SRC/tests/gpu/common.sh"; rm -rf "$tmp"; trap - EXIT; PATH=/nonexistent; require_gpu x'
    [ "$status" -eq 77 ]
    [ "$output" = "SKIP: no GPU on this machine: nvidia-smi is not installed (x)" ]
    run env NVCC= sh -c '. "$GA_SRC/tests/gpu/common.sh"; require_built /no/prog'
    [ "$status" -eq 77 ]
    [ "$output" = "SKIP: built without nvcc (/no/prog is not built)" ]
    run env NVCC=/usr/bin/nvcc sh -c '. "$GA_SRC/tests/gpu/common.sh"; require_built /no/prog'
    [ "$status" -eq 1 ]
    [ "$output" = "FAIL: /no/prog is not built, although configure found nvcc (/usr/bin/nvcc)" ]
}

@test "pool.sh: passes on the stub; a check line dropped, ok=0, silence or a failing library run fails it" {
    pool_stub
    gpu_script pool
    passes
    stub "$B/tests/gpu/pool_test" "$(lines "${POOL_LINES[@]}" | grep -v ipc)
[ \$LIB = 0 ] || echo 'gpuaccel: pool: hits=5' >&2"
    gpu_script pool
    fails_with "no line 'ipc ... ok=1'"
    pool_stub 'echo "ipc ok=0"'
    gpu_script pool
    fails_with "a check fails natively"
    stub "$B/tests/gpu/pool_test" '[ $LIB = 0 ] || echo "gpuaccel: pool: hits=5" >&2'
    gpu_script pool
    fails_with "no output natively"
    pool_stub '[ "${GPUACCEL_POOL_POISON:-0}" = 0 ] || exit 1'
    gpu_script pool
    fails_with "library run failed (exit 1)"
}

@test "graphs.sh: a check line dropped fails it, and so does a prover digest that is not the reference's" {
    real graphs_prog
    cudart_stub
    prover_stub
    gpu_script graphs
    passes
    # graphs_prog without its ptds line (and exiting 0)
    stub "$B/tests/progs/graphs_prog" "\"$PROGS/graphs_prog\" \"\$@\" | grep -v '^ptds '"
    gpu_script graphs
    fails_with "no line 'ptds ... ok=1'"
    real graphs_prog
    # the GPU runs, natively and under the library alike, wrong for --proofs 8
    prover_stub 'case "$args" in *" --proofs 8 "*) [ $ref = 1 ] || { echo "digest: 0000000000000bad"; exit 0; } ;; esac'
    gpu_script graphs
    fails_with "the output is not the reference's"
}

@test "hostmem.sh: passes on the stub; a check line dropped fails it" {
    body="$(lines 'async threads ok=1' 'async captured ok=1' 'pinned fence ok=1' 'pinned mapped ok=1' 'stream churn ok=1')
[ \$LIB = 0 ] || echo 'gpuaccel: async_pool: 3 of 3 stream-ordered allocations from a pool keeping up to 1024 MiB
gpuaccel: pinned: 4 of 6 page-locked allocations served from the cache
gpuaccel: streams: 9 of 10 stream creations served from kept streams' >&2"
    stub "$B/tests/gpu/hostmem_test" "$body"
    gpu_script hostmem
    passes
    stub "$B/tests/gpu/hostmem_test" "$(echo "$body" | grep -v 'pinned fence')"
    gpu_script hostmem
    fails_with "no line 'pinned fence ... ok=1'"
}

@test "gather.sh: passes on the stub; a build's line dropped, or ok=0, fails it" {
    body="$(lines 'compiled inline ok=1' 'compiled list ok=1' 'ptx inline ok=1' 'ptx list ok=1')"
    stub "$B/tests/gpu/gather_test" "[ \"\$1\" = \"$GA_SRC/kernels/gather.ptx\" ] || exit 2
$body"
    gpu_script gather
    passes
    stub "$B/tests/gpu/gather_test" "$(echo "$body" | grep -v 'ptx list')"
    gpu_script gather
    fails_with "no line 'ptx list ... ok=1'"
    stub "$B/tests/gpu/gather_test" "$(echo "$body" | sed 's/compiled list ok=1/compiled list ok=0/')"
    gpu_script gather
    fails_with "a check fails natively"
}

@test "staging.sh: passes with staging_prog on the fake driver; one copy's line dropped fails it" {
    # staging_test: each size by each entry point, stream order, too long, threads
    body=
    for size in 1048575 1048576 1048577 2097153 8388607 8388608 8388609 15728639 15728640 \
        15728641 33554445 67108871; do
        for api in cudaMemcpy cudaMemcpyAsync-stream cudaMemcpyAsync-default cuMemcpy cuMemcpyAsync; do
            body="$body$(lines "size=$size $api off=0 ok=1")"$'\n'
        done
    done
    for api in cudaMemcpy cudaMemcpyAsync-stream cudaMemcpyAsync-default cuMemcpy cuMemcpyAsync; do
        body="$body$(lines "stream order $api ok=1" "too long $api: htod=1 dtoh=1 ok=1")"$'\n'
    done
    body="$body$(lines 'threads ok=1')
[ \$LIB = 0 ] || echo 'gpuaccel: staging: htod=60 dtoh=60 declined=5' >&2"
    stub "$B/tests/gpu/staging_test" "$body"
    stub "$B/tests/gpu/staging_test_ptds" "$body"
    real staging_prog
    other_stubs
    gpu_script staging
    passes
    stub "$B/tests/gpu/staging_test_ptds" "$(echo "$body" | grep -v 'size=15728640 cuMemcpyAsync ')"
    gpu_script staging
    fails_with "no line 'size=15728640 cuMemcpyAsync ... ok=1'"
}

@test "capture.sh: passes with capture_prog on the fake driver; a host-pointer check dropped fails it" {
    other_stubs
    stub "$B/tests/gpu/capture_test" "$(lines 'mixed ok=1' 'modes ok=1' 'ptds ok=1' 'thread ok=1' \
        'invalid ok=1' 'churn ok=1')
[ \$LIB = 0 ] || echo 'gpuaccel: pool: hits=9 misses=1
gpuaccel: coalesce: hits=3 misses=1' >&2"
    gpu_script capture
    passes
    stub "$B/tests/gpu/hostptr_test" "$(lines 'device-dst: sum=4162870 ok=1' 'device-dst-reread: sum=1389660 ok=1' 'device-src: sum=12482560 ok=1' \
        'managed: sum=4162870 ok=1' 'registered: sum=4162870 ok=1' 'past-end: no error ok=1')"
    gpu_script capture
    fails_with "no line 'mapped: ... ok=1'"
}

@test "doors.sh: the door programs on the fake driver pass; result ok=0 with exit 0 fails it" {
    for p in door_dlsym door_getproc door_linked ptx_prog; do real $p; done
    gpu_script doors FAKECUDA_PTX_MAX=9.0
    passes
    stub "$B/tests/progs/door_linked" "\"$PROGS/door_linked\" \"\$@\" | sed 's/^result ok=1/result ok=0/'"
    gpu_script doors FAKECUDA_PTX_MAX=9.0
    fails_with "a check fails natively"
    stub "$B/tests/progs/door_linked" "\"$PROGS/door_linked\" \"\$@\" | grep -v '^result '"
    gpu_script doors FAKECUDA_PTX_MAX=9.0
    fails_with "no check line"
}

@test "prover.sh: the CPU reference is checked under the library too" {
    prover_stub
    gpu_script prover
    passes
    [ "$(echo "$output" | grep -c '^ok   ')" -eq 10 ] # five sizes, natively and under the library
    echo "$output" | grep -q "^GPU runs with: LD_PRELOAD=$GA_LIB "
    # under the library, one of gpu_check.sh's sizes gives another digest
    prover_stub '[ $LIB = 1 ] && case "$args" in *" --log-n 4 "*)
    echo "verify: 1 proof(s) accepted" >&2; echo "digest: 0000000000000bad"; exit 0 ;; esac'
    gpu_script prover
    fails_with "gpu_check.sh under the library"
    echo "$output" | grep -q "^FAIL: prover --log-n 4 --cols 3 --queries 5: GPU 'digest: 0000000000000bad' != reference"
}

@test "matrix.sh: a library run that crashes, or exits 1, fails its row even when native output varies" {
    cudart_stub
    gpu_script matrix PYTHON=false
    passes
    echo "$output" | grep -Eq '^cudart static +equal '
    stub "$B/tests/gpu/cudart_static" 'echo "result ok=1 t=$(date +%N)"; [ $LIB = 0 ] || kill -SEGV $$'
    gpu_script matrix PYTHON=false
    fails_with "a program's output differed under the library"
    echo "$output" | grep -Eq '^cudart static +DIFFER '
    echo "$output" | grep -q 'library signal 11 (exit 139), native exit 0;'
    stub "$B/tests/gpu/cudart_static" 'echo "result ok=1 t=$(date +%N)"; exit $LIB'
    gpu_script matrix PYTHON=false
    fails_with "a program's output differed under the library"
    # output that varies natively, the library run fine: shown, not a failure
    stub "$B/tests/gpu/cudart_static" 'echo "result ok=1 t=$(date +%N)"'
    gpu_script matrix PYTHON=false
    passes
    echo "$output" | grep -Eq '^cudart static +NATIVE-VARIES '
}

@test "samples.sh: a sample that crashes under the library is DIFFER, whatever two native runs say" {
    S=$T/samples
    mkdir -p "$S/Samples/a" "$S/bin"
    printf 'a\tSamples/a\t-\t-\t-\t-\t-\n' >"$S/SAMPLES"
    echo 0123456789abcdef >"$S/COMMIT"
    stub "$S/bin/a" 'echo "Result = PASS"'
    gpu_script samples GA_CUDA_SAMPLES="$S"
    passes
    stub "$S/bin/a" 'echo "Result = PASS $(date +%N)"; [ $LIB = 0 ] || kill -SEGV $$'
    gpu_script samples GA_CUDA_SAMPLES="$S"
    fails_with "1 sample(s) behaved differently under the library"
    echo "$output" | grep -q 'native exit 0, library signal 11 (exit 139)'
    run env PATH="$T/bin:$PATH" GA_BUILD="$B" GA_CUDA_SAMPLES="$S" GA_SAMPLES=nosuch sh "$GA_SRC/tests/gpu/samples.sh"
    fails_with "GA_SAMPLES (nosuch) names no sample"
}

@test "corpus.sh: a crash under the library fails; so does a driver with no check line" {
    C=$T/corpus
    mkdir -p "$C/sppark" "$C/bin"
    echo 0123456789abcdef0123 >"$C/sppark/COMMIT"
    stub "$C/bin/sppark" "$(lines 'digest: 00ff' 'check: ok')"
    gpu_script corpus GA_CORPUS="$C" GA_CORPUS_SIZES=16
    passes
    stub "$C/bin/sppark" 'echo "digest: $(date +%N)"; echo "check: ok"; [ $LIB = 0 ] || kill -SEGV $$'
    gpu_script corpus GA_CORPUS="$C" GA_CORPUS_SIZES=16
    fails_with "a prover's run failed or differed under the library"
    echo "$output" | grep -Eq '^sppark_ntt_16 +defaults +CRASH-SIG11 '
    stub "$C/bin/sppark" "$(lines 'digest: 00ff')"
    gpu_script corpus GA_CORPUS="$C" GA_CORPUS_SIZES=16
    fails_with "a prover's run failed or differed under the library"
    echo "$output" | grep -Eq '^sppark_ntt_16 +native +NATIVE-FAILED '
}

@test "reliability.sh: without compute-sanitizer a SKIP line says why and the rest runs; a wrong fault code fails" {
    stub "$B/tests/gpu/stress" 'echo "stress ok=1"'
    # a fault at the synchronization (700) natively; deferred by lazy sync to the copy
    stub "$B/tests/gpu/fault" '[ $LIB = 1 ] && [ "${GPUACCEL_LAZY_SYNC:-1}" = 1 ] && s=0 || s=${CODE:-700}
echo "launch=0 sync=$s alloc=700 copy=700 free=700"'
    gpu_script reliability GA_COMPUTE_SANITIZER=
    passes
    echo "$output" | grep -qx 'SKIP (part): GA_COMPUTE_SANITIZER is set and empty: memcheck, racecheck and synccheck did not run'
    echo "$output" | grep -q '^PASS: reliability (but for compute-sanitizer: '
    gpu_script reliability GA_COMPUTE_SANITIZER= CODE=719
    fails_with "the fault was reported natively as 'launch=0 sync=719"
    # with a sanitizer (a stub that runs the program): the prover held to its reference
    stub "$T/bin/cs" 'while [ "${1#--}" != "$1" ]; do shift 2; done; "$@"; rc=$?; echo "========= ERROR SUMMARY: 0 errors"; exit $rc'
    prover_stub
    cudart_stub
    gpu_script reliability GA_COMPUTE_SANITIZER="$T/bin/cs"
    passes
    [ "$(echo "$output" | grep -c '^compute-sanitizer .*: exit 0, 1 clean summary')" -eq 12 ]
    prover_stub '[ $LIB = 1 ] && { echo "digest: 0000000000000bad"; exit 0; }'
    gpu_script reliability GA_COMPUTE_SANITIZER="$T/bin/cs"
    fails_with "memcheck: prover did not print 'digest: "
}

@test "lazy.sh: every mode's checks by name; printf by its lines" {
    stub "$B/tests/gpu/lazy_test" 'case $1 in
chain) for k in 49 99 149 199; do echo "chain step $k ok=1"; done ;;
zerocopy) echo "zerocopy 100 of 100 ok=1" ;; pinned) echo "pinned 50 of 50 ok=1" ;;
hostfunc) echo "hostfunc 100 of 100 ok=1" ;; events) echo "events 10 of 10 ok=1" ;;
printf) for k in 0 1 2; do echo "device line $k"; echo "device line 1$k"; echo "host line $k"; done ;;
threads) for t in 0 1 2 3; do echo "thread $t 20 of 20 ok=1"; done ;;
fork) echo "fork child=7 ok=1" ;; capture) echo "capture ok=1" ;;
fault) [ $LIB = 1 ] && echo "fault sync=0 read=700" || echo "fault sync=700 read=700"; exit 0 ;;
esac
[ $LIB = 0 ] || echo "gpuaccel: lazy_sync: 5 of 6 synchronizations deferred, 1 waits made
gpuaccel: lazy_sync: cuMemHostAlloc: host and device share memory from now on" >&2'
    other_stubs
    gpu_script lazy
    passes
    stub "$B/tests/gpu/lazy_test.real" "$(cat "$B/tests/gpu/lazy_test")"
    stub "$B/tests/gpu/lazy_test" "\"$B/tests/gpu/lazy_test.real\" \"\$@\" | grep -v '^thread 2 '"
    gpu_script lazy
    fails_with "no line 'thread 2 ... ok=1'"
    stub "$B/tests/gpu/lazy_test" "\"$B/tests/gpu/lazy_test.real\" \"\$@\" | grep -v '^device line 1'"
    gpu_script lazy
    fails_with "printf: not 6 device lines and 3 host lines"
}

@test "multigpu.sh: each part under the defaults and every feature; a lost check line, a waived sample fail" {
    stub "$T/bin/nvidia-smi" 'echo "GPU 0: stub GPU (UUID: GPU-stub0)"; echo "GPU 1: stub GPU (UUID: GPU-stub1)"'
    stub "$B/tests/gpu/two_gpus" "$(lines 'two_gpus ok=1' 'pinned ok=1' 'async ok=1')"
    co=()
    for d in 1to0 0to1; do for k in copy async kernel remote; do co+=("$d-$k ok=1"); done; done
    stub "$B/tests/gpu/coalesce_test" "[ \"\$1\" = --two-gpus ] || exit 3
$(lines "${co[@]}")"
    gpu_script multigpu PYTHON=false CUDA_VISIBLE_DEVICES=0,1
    passes
    echo "$output" | grep -qx '== defaults: no GPUACCEL_\* set'
    echo "$output" | grep -q '^== every-feature: GPUACCEL_'
    [ "$(echo "$output" | grep -c '^ok: .*/two_gpus ->')" = 2 ]
    [ "$(echo "$output" | grep -c '^ok: .*/coalesce_test --two-gpus ->')" = 2 ]
    echo "$output" | grep -q '^SKIP (part): false cannot import torch'
    echo "$output" | grep -q '^SKIP (part): no CUDA samples carried'
    # a check line the program no longer prints
    stub "$B/tests/gpu/two_gpus" "$(lines 'two_gpus ok=1' 'async ok=1')"
    gpu_script multigpu PYTHON=false
    fails_with "no line 'pinned ... ok=1'"
    stub "$B/tests/gpu/two_gpus" "$(lines 'two_gpus ok=1' 'pinned ok=1' 'async ok=1')"
    # no peer access: the part skips, saying why; one GPU visible: the script skips
    stub "$B/tests/gpu/coalesce_test" 'echo "SKIP: no peer access between devices 0 and 1"; exit 77'
    gpu_script multigpu PYTHON=false
    passes
    echo "$output" | grep -q '^SKIP (part): coalesce_test --two-gpus: no peer access between devices'
    gpu_script multigpu PYTHON=false CUDA_VISIBLE_DEVICES=1
    [ "$status" -eq 77 ]
    echo "$output" | grep -q "^SKIP: CUDA_VISIBLE_DEVICES='1' shows fewer than two"
    # the two-GPU samples: all five run and agree; one waived natively fails
    S=$T/samples
    mkdir -p "$S/bin"
    echo 0123456789abcdef >"$S/COMMIT"
    for n in simpleP2P streamOrderedAllocationP2P conjugateGradientMultiDeviceCG simpleCUFFT_MGPU simpleCUFFT_2d_MGPU; do
        mkdir -p "$S/Samples/$n"
        printf '%s\tSamples/%s\t-\t-\t-\t-\t-\n' "$n" "$n" >>"$S/SAMPLES"
        stub "$S/bin/$n" 'echo "Result = PASS"'
    done
    gpu_script multigpu PYTHON=false GA_MULTIGPU_PARTS=samples GA_CUDA_SAMPLES="$S"
    passes
    [ "$(echo "$output" | grep -c '^   carried 5, built 5, ran natively 5, agreed 5, differ 0$')" = 2 ]
    stub "$S/bin/simpleCUFFT_MGPU" 'echo "Two GPUs are required to run simpleCUFFT_MGPU sample code"'
    gpu_script multigpu PYTHON=false GA_MULTIGPU_PARTS=samples GA_CUDA_SAMPLES="$S"
    fails_with "the two-GPU samples, defaults (exit 1)"
    echo "$output" | grep -q 'required: simpleCUFFT_MGPU: waived natively (exit 0): Two GPUs are required'
    stub "$S/bin/simpleCUFFT_MGPU" 'echo "Result = PASS"'
    stub "$S/bin/simpleP2P" 'echo "Two or more GPUs with Peer-to-Peer access capability are required"; echo Waiving; exit 2'
    gpu_script multigpu PYTHON=false GA_MULTIGPU_PARTS=samples GA_CUDA_SAMPLES="$S"
    fails_with "the two-GPU samples, defaults (exit 1)"
    echo "$output" | grep -q 'required: simpleP2P: failed natively: waived (exit 2)'
}
