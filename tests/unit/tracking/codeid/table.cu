// table.cu - base.cu's scale, the code the same, one constant of its table other.
#include <stdint.h>

__constant__ uint32_t table[4] = {3, 5, 7, 13};

__device__ __noinline__ uint32_t mix(uint32_t x, uint32_t k)
{
    return x * k + table[x & 3];
}

__global__ void scale(uint32_t *p, uint32_t n, uint32_t k)
{
    uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        p[i] = mix(p[i], k);
}
