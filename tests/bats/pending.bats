#!/usr/bin/env bats
# pending.bats - library bugs the fake driver shows, each written as the test
# that passes once it is fixed. Not in TESTS: make check stays green meanwhile.
# Run it from the build directory with
#   GA_LIB=$PWD/.libs/libgpuaccel.so GA_BUILD=$PWD GA_SRC=$PWD bats tests/bats/pending.bats
# and move a test to the file of its feature once it passes.
load helpers

setup() { setup_fake; }

# hostmem_prog setfirst: the program sets the default memory pool's release
# threshold (12345 bytes), then 8 times allocates 1 MiB with cuMemAllocAsync,
# copies through it, frees it with cuMemFreeAsync and synchronizes the
# stream. The driver gives the pool's reserve back down to the threshold at
# each synchronization, so natively the program then reads reserved=12345 and
# free=8589922247 (the fake's 8 GiB less the threshold). lazy_sync classes
# cuMemGetInfo and cuMemPool* as calls that observe nothing
# (src/features/lazy_sync/lazy_sync.c, safe_names) and defers the
# synchronization, so the program reads reserved=1048576 and
# free=8588886016 without deferred completion, free=8589934592 with it (the
# free still queued). The same in `async` mode (reserved=1048576 where
# native reads 0) and under GPUACCEL=all. A program that sizes its work by
# cuMemGetInfo sees another machine.
@test "lazy_sync: the free memory and pool reserve a program reads are native's" {
    like_native GPUACCEL=0 GPUACCEL_LAZY_SYNC=1 -- "$PROGS/hostmem_prog" setfirst 8
    like_native GPUACCEL=0 GPUACCEL_LAZY_SYNC=1 -- "$PROGS/hostmem_prog" async 8
    export FAKECUDA_DEFER=1000000
    like_native GPUACCEL=0 GPUACCEL_LAZY_SYNC=1 -- "$PROGS/hostmem_prog" setfirst 8
}
