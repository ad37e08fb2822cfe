#!/bin/sh
# doors.sh (GPU) - the driver-level door programs against the real libcuda:
# results and error codes identical with and without the library, each
# program's own check passing (its "result ok=1" line), and the library saw
# their calls through each door.
. "${GA_SRC:-.}/tests/gpu/common.sh"
require_gpu doors
P="$GA_BUILD/tests/progs"
PTX="$GA_SRC/tests/progs/kernels.ptx"

compare_runs "$P/door_dlsym" "$PTX"
expect_ok result
expect_calls cuLaunchKernel 22; expect_calls cuMemcpyDtoH_v2 258
compare_runs "$P/door_dlsym" "$PTX" pt
expect_ok result
expect_calls cuLaunchKernel_ptsz 22
compare_runs "$P/door_getproc" "$PTX"
expect_ok result
expect_calls cuLaunchKernel 22; expect_calls cuMemAlloc_v2 2
compare_runs "$P/door_getproc" "$PTX" pt
expect_ok result
expect_calls cuLaunchKernel_ptsz 22; expect_calls cuMemcpyDtoH_v2_ptds 258
compare_runs "$P/door_linked" "$PTX"
expect_ok result
expect_calls cuLaunchKernel_ptsz 22; expect_calls cuMemcpyHtoD_v2_ptds 1
echo "codes: $(echo "$native_out" | grep codes)"

# PTX from a newer toolkit (.version 9.9, above what this driver takes): the
# driver refuses it natively; under the library the loads of code it can JIT
# succeed at the highest version it takes, and code it cannot JIT still gets
# the driver's own first error.
native_ptx=$(env -u LD_PRELOAD "$P/ptx_prog") || fail "ptx_prog failed natively"
lib_ptx=$(env LD_PRELOAD="$GA_LIB" "$P/ptx_prog" 2>"$tmp/ptx.err") || fail "ptx_prog failed under the library"
echo "ptx native: $native_ptx"
echo "ptx library: $lib_ptx ($(grep -c 'loaded as .version' "$tmp/ptx.err") retries said)"
# cuModuleLoadData compiles at once; cuLibraryLoadData may defer the JIT to
# the first kernel taken (lazy loading), in which case its answers stay native.
echo "$native_ptx" | grep -q 'module old=222 new=222' ||
    fail "the driver took PTX .version 9.9 natively: the test needs a newer one"
echo "$lib_ptx" | grep -q 'module old=0 new=222' ||
    fail "PTX retry: expected old code loaded and new code refused with the driver's error"
lib_lib=$(echo "$lib_ptx" | sed 's/.*library //')
if echo "$native_ptx" | grep -q 'library old=222'; then
    [ "$lib_lib" = "old=0 new=222" ] || fail "PTX retry through cuLibraryLoadData: $lib_lib"
else
    [ "$lib_lib" = "$(echo "$native_ptx" | sed 's/.*library //')" ] ||
        fail "lazily loaded libraries: answers changed ($lib_lib)"
fi
lib_off=$(env LD_PRELOAD="$GA_LIB" GPUACCEL_PTX_RETRY=0 "$P/ptx_prog" 2>/dev/null)
[ "$lib_off" = "$native_ptx" ] || fail "GPUACCEL_PTX_RETRY=0 changed the answers: $lib_off"
echo "PASS: doors"
