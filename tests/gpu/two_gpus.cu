// two_gpus.cu - one process using two GPUs, switching the current device
// between every call: allocations, launches, small reads and frees on each
// (a scratch block a round, reused by the pool on its own device), checked
// against the host's arithmetic. Prints one line.
#include <cstdio>

#include "check.cuh"

__global__ void scale(unsigned *p, unsigned n, unsigned k)
{
    for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        p[i] = p[i] * k + 1;
}

int main()
{
    skip_without_gpu();
    int count = 0;
    CK(cudaGetDeviceCount(&count));
    if (count < 2) {
        fprintf(stderr, "SKIP: fewer than two GPUs (%d)\n", count);
        return 77;
    }
    const unsigned n = 1 << 16;
    unsigned *buf[2];
    unsigned model = 0;
    int ok = 1;
    for (int d = 0; d < 2; d++) {
        CK(cudaSetDevice(d));
        CK(cudaMalloc(&buf[d], n * 4));
        CK(cudaMemset(buf[d], 0, n * 4));
    }
    for (int round = 0; round < 200; round++) {
        unsigned k = 3 + round % 5;
        for (int d = 0; d < 2; d++) { // the same work on both, devices switched per call
            CK(cudaSetDevice(d));
            scale<<<32, 256>>>(buf[d], n, k);
        }
        model = model * k + 1;
        for (int d = 0; d < 2; d++) {
            CK(cudaSetDevice(d));
            unsigned v;
            CK(cudaMemcpy(&v, buf[d] + (round * 97) % n, 4, cudaMemcpyDeviceToHost));
            ok &= v == model;
        }
        // Scratch of one size on each device every round: under the pool a
        // freed block comes back, and must come back on its own device only,
        // holding what this round wrote (the last kernel still runs at free).
        for (int d = 0; d < 2; d++) {
            CK(cudaSetDevice(d));
            unsigned *s, v;
            cudaPointerAttributes a;
            CK(cudaMalloc(&s, n * 4));
            CK(cudaPointerGetAttributes(&a, s));
            ok &= a.device == d;
            CK(cudaMemcpy(s, buf[d], n * 4, cudaMemcpyDeviceToDevice));
            scale<<<32, 256>>>(s, n, 2);
            CK(cudaMemcpy(&v, s + (round * 31) % n, 4, cudaMemcpyDeviceToHost));
            ok &= v == model * 2 + 1;
            scale<<<32, 256>>>(s, n, 5);
            CK(cudaFree(s));
        }
        if (round % 50 == 49) // churn on each device
            for (int d = 0; d < 2; d++) {
                CK(cudaSetDevice(d));
                unsigned *tmp;
                CK(cudaMalloc(&tmp, (1 + round) * 4096));
                CK(cudaFree(tmp));
            }
    }
    for (int d = 0; d < 2; d++) {
        CK(cudaSetDevice(d));
        CK(cudaFree(buf[d]));
    }
    printf("two_gpus ok=%d\n", ok);
    return ok ? 0 : 1;
}
