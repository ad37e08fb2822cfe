#!/bin/sh
# lazy.sh (GPU) - deferred synchronizations (GPUACCEL_LAZY_SYNC): every
# host-visible result of lazy_test.cu as native, with a fresh seed each run:
# stwo-style chains, zero-copy memory, page-locked asynchronous copies, host
# functions, events the program times, device printf, threads handing buffers
# over, fork, a capture after owed waits; alone and with every feature on. A
# kernel's fault is still reported, by the next call that observes the device.
# Every check of a mode passes (each by name); printf's output is the device's
# six lines and the host's three, in native order. Then the prover, the
# capture and host-pointer programs with it on.
. "${GA_SRC:-.}/tests/gpu/common.sh"
require_gpu lazy
T="$GA_BUILD/tests/gpu/lazy_test"
require_built "$T"
seed=$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')
echo "seed $seed"
deferred() { # how many synchronizations the library deferred in the last run
    echo "$SHIM_ERR" | sed -n 's/^gpuaccel: lazy_sync: \([0-9]*\) of .*/\1/p' | head -1 | grep . || echo 0
}
for env in "GPUACCEL_LAZY_SYNC=1" "$ALL_FEATURES"; do
    SHIM_ENV=$env
    for mode in chain zerocopy pinned hostfunc events printf threads fork capture; do
        case $mode in
        printf) # no check of its own: its lines, in the native order
            compare_runs --checks '^device line [0-9]+$' "$T" $mode "$seed"
            if [ "$(echo "$native_out" | grep -c '^device line [0-9]*$')" -ne 6 ] ||
                [ "$(echo "$native_out" | grep -c '^host line [0-9]*$')" -ne 3 ]; then
                fail "printf: not 6 device lines and 3 host lines: $native_out"
            fi
            ;;
        *)
            compare_runs "$T" $mode "$seed"
            case $mode in
            chain) expect_ok "chain step 49" "chain step 99" "chain step 149" "chain step 199" ;;
            threads) expect_ok "thread 0" "thread 1" "thread 2" "thread 3" ;;
            *) expect_ok $mode ;;
            esac
            ;;
        esac
        case $mode in
        chain | threads | fork | capture)
            [ "$(deferred)" -gt 0 ] || fail "$mode: no synchronization was deferred" ;;
        zerocopy | pinned)
            echo "$SHIM_ERR" | grep -q 'host and device share memory' ||
                fail "$mode: shared memory not seen" ;;
        esac
    done
done
# a fault: natively the synchronization reports it; deferred, the read does
native_out=$(env -u LD_PRELOAD "$T" fault "$seed" 2>/dev/null)
echo "native: $native_out"
echo "$native_out" | grep -Eq 'fault sync=[1-9][0-9]* read=[1-9]' || fail "no fault natively: $native_out"
code=$(echo "$native_out" | sed -n 's/.*sync=\([0-9]*\).*/\1/p')
lazy_out=$(env LD_PRELOAD="$GA_LIB" GPUACCEL_LAZY_SYNC=1 "$T" fault "$seed" 2>/dev/null)
echo "lazy:   $lazy_out"
echo "$lazy_out" | grep -Eq "fault sync=(0|$code) read=$code\$" ||
    fail "the fault was not reported as the driver's: $lazy_out"
# programs written for other features, with lazy synchronization and graphs
SHIM_ENV="GPUACCEL_LAZY_SYNC=1 GPUACCEL_GRAPHS=1"
compare_other_programs
echo "PASS: lazy"
