// fault.cu - a kernel that faults: the error codes the program sees afterwards
// (the sticky error on every call) must be the same with and without the
// library, whatever its features.
#include <cstdio>

#include "check.cuh"

__global__ void bad_write(unsigned *p)
{
    p[threadIdx.x] = 1; // p is NULL: an illegal address
}

int main()
{
    skip_without_gpu();
    unsigned *d = nullptr, v = 0;
    CK(cudaMalloc(&d, 4096));
    CK(cudaMemset(d, 0, 4096));
    CK(cudaMemcpy(&v, d, 4, cudaMemcpyDeviceToHost)); // a window, if coalescing
    CK(cudaFree(d));
    bad_write<<<1, 32>>>(nullptr);
    int launch = cudaGetLastError();
    int sync = cudaDeviceSynchronize();
    int alloc = cudaMalloc(&d, 4096);
    int copy = cudaMemcpy(&v, d, 4, cudaMemcpyDeviceToHost);
    int release = cudaFree(d);
    printf("launch=%d sync=%d alloc=%d copy=%d free=%d\n", launch, sync, alloc, copy, release);
    return sync == 0; // 0 when the fault was reported, as it must be
}
