// cudart_app.cu - a runtime-API program as nvcc builds it by default (static
// cudart, which finds the driver through cuGetProcAddress), and also built with
// -cudart shared and with --default-stream per-thread. Prints its results and
// the error codes of a few bad calls, so runs with and without the library
// can be compared line by line.
#include <cstdio>
#include <cstdlib>

#include "check.cuh"

__global__ void add_kernel(unsigned *p, unsigned n, unsigned v)
{
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        p[i] += v * (i % 7 + 1);
}

int main()
{
    skip_without_gpu();
    const unsigned n = 1 << 16, rounds = 50;
    unsigned *d;
    CK(cudaMalloc(&d, n * sizeof *d));
    CK(cudaMemset(d, 0, n * sizeof *d));
    for (unsigned r = 0; r < rounds; r++)
        add_kernel<<<(n + 255) / 256, 256>>>(d, n, r);
    CK(cudaGetLastError());
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CK(cudaDeviceSynchronize());
    for (unsigned r = 0; r < rounds; r++)
        add_kernel<<<(n + 127) / 128, 128, 0, s>>>(d, n, 1);
    CK(cudaStreamSynchronize(s));

    unsigned long long sum = 0;
    bool ok = true;
    for (unsigned i = 0; i < 256; i++) { // element by element, as naive code does
        unsigned v;
        CK(cudaMemcpy(&v, d + i, sizeof v, cudaMemcpyDeviceToHost));
        unsigned want = (i % 7 + 1) * (rounds * (rounds - 1) / 2 + rounds);
        ok = ok && v == want;
    }
    unsigned *h = (unsigned *)malloc(n * sizeof *h);
    CK(cudaMemcpy(h, d, n * sizeof *h, cudaMemcpyDeviceToHost));
    for (unsigned i = 0; i < n; i++)
        sum += h[i];
    printf("result ok=%d sum=%llu\n", ok, sum);

    // Error parity: the same codes with and without the library.
    add_kernel<<<1, 2048>>>(d, n, 1);
    int oversized = cudaGetLastError();
    void *huge = nullptr;
    int huge_alloc = cudaMalloc(&huge, (size_t)1 << 50);
    cudaGetLastError();
    CK(cudaFree(d));
    int bad_free = cudaFree((void *)0x1234);
    cudaGetLastError();
    printf("codes oversized_block=%d huge_alloc=%d bad_free=%d\n", oversized, huge_alloc,
           bad_free);
    CK(cudaStreamDestroy(s));
    free(h);
    return ok ? 0 : 1;
}
