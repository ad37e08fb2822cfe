// oom_test.cu - a program whose own allocation fails while the library's
// caches hold memory must still get it: the caches give their memory back and
// the allocation is retried. Fills the device, frees it (the pool and the
// stream-ordered pool then hold it), and asks for one block as large as most
// of what was freed. Natively that block fits; under the library it fits only
// if the caches give back. Each block is written and read back.
//   oom_test        -> "pool ok=1", "async ok=1", "host ok=1"; exit 1 if any is 0
#include <cuda_runtime.h>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "check.cuh"

static const size_t CHUNK = 256u << 20;

__global__ void fill(uint32_t *p, size_t n, uint32_t seed)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        p[i] = (uint32_t)i * 2654435761u ^ seed;
}

// Write a pattern over the whole block and check a sample of it.
static bool works(void *p, size_t bytes, uint32_t seed)
{
    size_t n = bytes / 4;
    fill<<<1024, 256>>>((uint32_t *)p, n, seed);
    if (cudaDeviceSynchronize() != cudaSuccess)
        return false;
    for (size_t k = 0; k < 64; k++) {
        size_t i = (n - 1) / 63 * k;
        uint32_t v = 0;
        if (cudaMemcpy(&v, (uint32_t *)p + i, 4, cudaMemcpyDeviceToHost) != cudaSuccess ||
            v != ((uint32_t)i * 2654435761u ^ seed))
            return false;
    }
    return true;
}

// Allocate CHUNKs with `alloc` until it fails; free them with `release`.
// Returns the bytes that were held.
template <typename A, typename R> static size_t fill_device(A alloc, R release)
{
    std::vector<void *> held;
    for (;;) {
        void *p = nullptr;
        if (alloc(&p) != cudaSuccess)
            break;
        held.push_back(p);
    }
    cudaGetLastError(); // the failure that ended the loop is expected
    for (void *p : held)
        release(p);
    CK(cudaDeviceSynchronize());
    return held.size() * CHUNK;
}

// One block of most of what was freed: it fits only once the caches gave back.
static bool big_block(size_t freed, const char *what)
{
    size_t want = freed > 4 * CHUNK ? freed - 2 * CHUNK : freed / 2;
    void *p = nullptr;
    cudaError_t e = cudaMalloc(&p, want);
    bool ok = e == cudaSuccess && works(p, want, 7);
    printf("%s ok=%d\n", what, ok ? 1 : 0);
    if (!ok)
        fprintf(stderr, "%s: cudaMalloc(%zu MiB) after freeing %zu MiB: %s\n", what, want >> 20,
                freed >> 20, cudaGetErrorString(e));
    if (p)
        CK(cudaFree(p));
    return ok;
}

int main()
{
    skip_without_gpu();
    CK(cudaFree(0));
    bool ok = true;

    // The pool: freed blocks are kept (up to its limit).
    size_t freed = fill_device([](void **p) { return cudaMalloc(p, CHUNK); },
                               [](void *p) { CK(cudaFree(p)); });
    ok &= big_block(freed, "pool");

    // The stream-ordered pool: its memory is kept between synchronizations.
    cudaStream_t s;
    CK(cudaStreamCreate(&s));
    freed = fill_device([s](void **p) { return cudaMallocAsync(p, CHUNK, s); },
                        [s](void *p) { CK(cudaFreeAsync(p, s)); });
    CK(cudaStreamSynchronize(s));
    ok &= big_block(freed, "async");
    CK(cudaStreamDestroy(s));

    // Page-locked host memory: a few blocks freed into the cache, then a block
    // of their total: granted (the cache never stands in the way of the
    // program's own request).
    std::vector<void *> hb;
    for (int i = 0; i < 4; i++) {
        void *p = nullptr;
        CK(cudaMallocHost(&p, 64u << 20));
        hb.push_back(p);
    }
    for (void *p : hb)
        CK(cudaFreeHost(p));
    void *h = nullptr;
    bool hok = cudaMallocHost(&h, 256u << 20) == cudaSuccess;
    if (hok) {
        ((volatile char *)h)[0] = 1, ((volatile char *)h)[(256u << 20) - 1] = 2;
        CK(cudaFreeHost(h));
    }
    printf("host ok=%d\n", hok ? 1 : 0);
    ok &= hok;
    return ok ? 0 : 1;
}
