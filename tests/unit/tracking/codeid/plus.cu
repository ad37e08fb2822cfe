// plus.cu - base.cu with an unrelated kernel before it in the same module.
#include <stdint.h>

__global__ void unrelated(uint32_t *p, uint32_t n)
{
    uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        p[i] = i ^ n;
}

#include "base.cu"
