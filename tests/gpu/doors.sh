#!/bin/sh
# doors.sh (GPU) - the driver-level door programs against the real libcuda:
# results and error codes identical with and without the library, and the
# library saw their calls through each door.
. "${GA_SRC:-.}/tests/gpu/common.sh"
require_gpu doors
P="$GA_BUILD/tests/progs"
PTX="$GA_SRC/tests/progs/kernels.ptx"

compare_runs "$P/door_dlsym" "$PTX"
expect_calls cuLaunchKernel 22; expect_calls cuMemcpyDtoH_v2 258
compare_runs "$P/door_dlsym" "$PTX" pt
expect_calls cuLaunchKernel_ptsz 22
compare_runs "$P/door_getproc" "$PTX"
expect_calls cuLaunchKernel 22; expect_calls cuMemAlloc_v2 2
compare_runs "$P/door_getproc" "$PTX" pt
expect_calls cuLaunchKernel_ptsz 22; expect_calls cuMemcpyDtoH_v2_ptds 258
compare_runs "$P/door_linked" "$PTX"
expect_calls cuLaunchKernel_ptsz 22; expect_calls cuMemcpyHtoD_v2_ptds 1
echo "codes: $(echo "$native_out" | grep codes)"
echo "PASS: doors"
