/* grid.cuh - launch geometry for grid=any replacement kernels: a flattened
 * thread index and stride, so a 1-D, 2-D or 3-D launch gives every thread a
 * distinct index and together they cover any problem by grid-stride loops.
 * Owns: nothing stateful; shared by prover_kernels.cu, stwo_kernels.cu and
 * risc0_kernels.cu. */
#ifndef GA_KERNELS_GRID_CUH
#define GA_KERNELS_GRID_CUH

#include <stdint.h>

/* Flattened thread index within the block and block index within the grid,
 * so that a 2-D or 3-D launch still gives every thread a distinct index. */
static __device__ __forceinline__ uint32_t ga_block_threads(void)
{
    return blockDim.x * blockDim.y * blockDim.z;
}

static __device__ __forceinline__ uint32_t ga_tid(void)
{
    return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
}

static __device__ __forceinline__ uint64_t ga_gid(void)
{
    uint64_t block = blockIdx.x + (uint64_t)gridDim.x * (blockIdx.y + (uint64_t)gridDim.y * blockIdx.z);
    return block * ga_block_threads() + ga_tid();
}

static __device__ __forceinline__ uint64_t ga_gstride(void)
{
    return (uint64_t)gridDim.x * gridDim.y * gridDim.z * ga_block_threads();
}

static __device__ __forceinline__ int ga_aligned16(const void *p)
{
    return ((uintptr_t)p & 15u) == 0;
}

#endif
