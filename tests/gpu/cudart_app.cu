// cudart_app.cu - a runtime-API program as nvcc builds it by default (static
// cudart, which finds the driver through cuGetProcAddress), and also built with
// -cudart shared and with --default-stream per-thread. Prints its results and
// the error codes of a few bad calls, so runs with and without the library
// can be compared line by line.
#include <cstdio>
#include <cstdlib>

#define CHECK(call)                                                                       \
    do {                                                                                  \
        cudaError_t e_ = (call);                                                          \
        if (e_ != cudaSuccess) {                                                          \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call,                 \
                    cudaGetErrorString(e_));                                              \
            return 1;                                                                     \
        }                                                                                 \
    } while (0)

__global__ void add_kernel(unsigned *p, unsigned n, unsigned v)
{
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        p[i] += v * (i % 7 + 1);
}

int main()
{
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
        fprintf(stderr, "SKIP: no CUDA device\n");
        return 77;
    }
    const unsigned n = 1 << 16, rounds = 50;
    unsigned *d;
    CHECK(cudaMalloc(&d, n * sizeof *d));
    CHECK(cudaMemset(d, 0, n * sizeof *d));
    for (unsigned r = 0; r < rounds; r++)
        add_kernel<<<(n + 255) / 256, 256>>>(d, n, r);
    CHECK(cudaGetLastError());
    cudaStream_t s;
    CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CHECK(cudaDeviceSynchronize());
    for (unsigned r = 0; r < rounds; r++)
        add_kernel<<<(n + 127) / 128, 128, 0, s>>>(d, n, 1);
    CHECK(cudaStreamSynchronize(s));

    unsigned long long sum = 0;
    bool ok = true;
    for (unsigned i = 0; i < 256; i++) { // element by element, as naive code does
        unsigned v;
        CHECK(cudaMemcpy(&v, d + i, sizeof v, cudaMemcpyDeviceToHost));
        unsigned want = (i % 7 + 1) * (rounds * (rounds - 1) / 2 + rounds);
        ok = ok && v == want;
    }
    unsigned *h = (unsigned *)malloc(n * sizeof *h);
    CHECK(cudaMemcpy(h, d, n * sizeof *h, cudaMemcpyDeviceToHost));
    for (unsigned i = 0; i < n; i++)
        sum += h[i];
    printf("result ok=%d sum=%llu\n", ok, sum);

    // Error parity: the same codes with and without the library.
    add_kernel<<<1, 2048>>>(d, n, 1);
    int oversized = cudaGetLastError();
    void *huge = nullptr;
    int huge_alloc = cudaMalloc(&huge, (size_t)1 << 50);
    cudaGetLastError();
    CHECK(cudaFree(d));
    int bad_free = cudaFree((void *)0x1234);
    cudaGetLastError();
    printf("codes oversized_block=%d huge_alloc=%d bad_free=%d\n", oversized, huge_alloc,
           bad_free);
    CHECK(cudaStreamDestroy(s));
    free(h);
    return ok ? 0 : 1;
}
