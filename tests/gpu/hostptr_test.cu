// hostptr_test.cu - "host" pointers that are not plain host memory, sizes of
// 0, NULL frees and reads past the end of small allocations, as real code
// makes them; run natively and under the library (tests/gpu/capture.sh), the
// output must be the same. Prints the values read and every return code; each
// sum is checked against the host's arithmetic ("... ok=0|1"), and the program
// exits 1 when any check fails.
//   device-dst   cudaMemcpy(device_dst, device_src, 4, cudaMemcpyDeviceToHost) in
//                a loop (a STARK prover's Merkle wrapper does this), the async
//                form plus a stream sync, and cudaMemcpyDefault; then
//                device-dst-reread: the destination read back from the host
//                before and after such synchronous copies
//   device-src   cudaMemcpy(device_dst, device_src, n, cudaMemcpyHostToDevice)
//   managed      reads into cudaMallocManaged memory
//   mapped       reads into cudaHostAlloc(cudaHostAllocMapped) memory, then a
//                kernel reads it through its device pointer
//   registered   reads into cudaHostRegister'ed memory
//   zero         cudaMalloc of 0, cudaFree(NULL), cudaFreeAsync(NULL), 0-byte
//                copies each way
//   past-end     kernels that read up to 256 bytes past the end of 4-byte and
//                100-byte allocations, after allocation churn
// usage: hostptr_test
#include <cuda_runtime.h>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include "check.cuh"

enum { N = 4096 };

__global__ void iota(uint32_t *p, uint32_t n, uint32_t base)
{
    uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        p[i] = base + i;
}

__global__ void sum_words(const uint32_t *p, uint32_t n, unsigned long long *out)
{
    unsigned long long s = 0;
    for (uint32_t i = threadIdx.x; i < n; i += blockDim.x)
        s += p[i];
    atomicAdd(out, s);
}

// Reads `words` words from p, whatever the allocation's size: the values are
// not used (what lies past the end is unspecified), only that nothing faults.
__global__ void read_past(const uint32_t *p, uint32_t words, uint32_t *sink)
{
    uint32_t acc = 0;
    for (uint32_t i = threadIdx.x; i < words; i += blockDim.x)
        acc ^= p[i];
    if (acc == 0xdeadbeefu)
        *sink = acc;
}

static unsigned long long device_sum(const uint32_t *p, uint32_t n)
{
    unsigned long long *out, h = 0;
    CK(cudaMalloc(&out, sizeof *out));
    CK(cudaMemset(out, 0, sizeof *out));
    sum_words<<<1, 256>>>(p, n, out);
    CK(cudaMemcpy(&h, out, sizeof h, cudaMemcpyDeviceToHost));
    CK(cudaFree(out));
    return h;
}

// Every third word of src to dst, one 4-byte copy each, the three ways.
static void scatter_reads(uint32_t *dst, const uint32_t *src, cudaStream_t s)
{
    for (int i = 0; i < N; i += 3) {
        if (i % 9 == 0)
            CK(cudaMemcpy(dst + i, src + i, 4, cudaMemcpyDeviceToHost));
        else if (i % 9 == 3) {
            CK(cudaMemcpyAsync(dst + i, src + i, 4, cudaMemcpyDeviceToHost, s));
            CK(cudaStreamSynchronize(s));
        } else {
            CK(cudaMemcpy(dst + i, src + i, 4, cudaMemcpyDefault));
        }
    }
}

static uint32_t read_word(const uint32_t *p)
{
    uint32_t v;
    CK(cudaMemcpy(&v, p, 4, cudaMemcpyDeviceToHost));
    return v;
}

static unsigned long long host_sum(const uint32_t *p)
{
    unsigned long long s = 0;
    for (int i = 0; i < N; i++)
        s += p[i];
    return s;
}

// What the sums must be: src holds 1000 + i; scatter_reads copies every third
// word into a zeroed buffer, a whole copy all of them.
static unsigned long long want_sum(int step)
{
    unsigned long long s = 0;
    for (int i = 0; i < N; i += step)
        s += 1000u + (unsigned)i;
    return s;
}

int main()
{
    skip_without_gpu();
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    uint32_t *src, *dst;
    CK(cudaMalloc(&src, N * 4));
    CK(cudaMalloc(&dst, N * 4));
    iota<<<N / 256, 256>>>(src, N, 1000);
    CK(cudaMemset(dst, 0, N * 4));
    CK(cudaDeviceSynchronize());

    const unsigned long long third = want_sum(3), whole = want_sum(1);
    scatter_reads(dst, src, s);
    unsigned long long sum = device_sum(dst, N);
    printf("device-dst: sum=%llu ok=%d\n", sum, verdict(sum == third));

    // The same destination read back from the host before and after such
    // copies (synchronous ones alone, nothing else between): what they wrote,
    // not what was there before (a library that keeps device memory it read
    // must see those copies as writes).
    CK(cudaMemset(dst, 0, N * 4));
    unsigned long long before = 0, after = 0;
    for (int i = 0; i < N; i += 9)
        before += read_word(dst + i);
    for (int i = 0; i < N; i += 9)
        CK(cudaMemcpy(dst + i, src + i, 4, cudaMemcpyDeviceToHost));
    for (int i = 0; i < N; i += 9)
        after += read_word(dst + i);
    printf("device-dst-reread: sum=%llu ok=%d\n", after,
           verdict(before == 0 && after == want_sum(9)));

    CK(cudaMemset(dst, 0, N * 4));
    CK(cudaMemcpy(dst, src, N * 4, cudaMemcpyHostToDevice)); // a device source named host
    sum = device_sum(dst, N);
    printf("device-src: sum=%llu ok=%d\n", sum, verdict(sum == whole));

    uint32_t *managed;
    CK(cudaMallocManaged(&managed, N * 4));
    memset(managed, 0, N * 4);
    scatter_reads(managed, src, s);
    CK(cudaDeviceSynchronize());
    sum = host_sum(managed);
    printf("managed: sum=%llu ok=%d\n", sum, verdict(sum == third));

    uint32_t *mapped, *mapped_dev;
    CK(cudaHostAlloc(&mapped, N * 4, cudaHostAllocMapped));
    CK(cudaHostGetDevicePointer(&mapped_dev, mapped, 0));
    memset(mapped, 0, N * 4);
    scatter_reads(mapped, src, s);
    sum = host_sum(mapped);
    unsigned long long view = device_sum(mapped_dev, N);
    printf("mapped: sum=%llu device-view=%llu ok=%d\n", sum, view,
           verdict(sum == third && view == third));

    uint32_t *reg = static_cast<uint32_t *>(aligned_alloc(4096, N * 4));
    memset(reg, 0, N * 4);
    CK(cudaHostRegister(reg, N * 4, cudaHostRegisterDefault));
    scatter_reads(reg, src, s);
    sum = host_sum(reg);
    printf("registered: sum=%llu ok=%d\n", sum, verdict(sum == third));
    CK(cudaHostUnregister(reg));
    free(reg);

    void *z = nullptr;
    cudaError_t a0 = cudaMalloc(&z, 0);
    printf("zero: malloc0=%d ptr=%s free-null=%d freeasync-null=%d", (int)a0,
           z ? "set" : "null", (int)cudaFree(nullptr), (int)cudaFreeAsync(nullptr, s));
    uint32_t h[4] = {0, 0, 0, 0};
    printf(" dtoh0=%d htod0=%d dtod0=%d\n", (int)cudaMemcpy(h, src, 0, cudaMemcpyDeviceToHost),
           (int)cudaMemcpy(dst, h, 0, cudaMemcpyHostToDevice),
           (int)cudaMemcpy(dst, src, 0, cudaMemcpyDeviceToDevice));
    if (z)
        CK(cudaFree(z));
    (void)cudaGetLastError();

    // past-end: small blocks that the pool hands out again after churn
    uint32_t *sink;
    CK(cudaMalloc(&sink, 4));
    for (int round = 0; round < 50; round++) {
        uint32_t *tiny, *small;
        CK(cudaMalloc(&tiny, 4));
        CK(cudaMalloc(&small, 100));
        read_past<<<1, 64>>>(tiny, 64, sink);   // 256 bytes from a 4-byte allocation
        read_past<<<1, 64>>>(small, 64, sink);  // 256 bytes from a 100-byte one
        CK(cudaGetLastError());
        CK(cudaFree(tiny));
        CK(cudaFree(small));
    }
    cudaError_t past = cudaDeviceSynchronize();
    printf("past-end: %s ok=%d\n", cudaGetErrorString(past), verdict(past == cudaSuccess));

    CK(cudaFree(sink));
    CK(cudaFreeHost(mapped));
    CK(cudaFree(managed));
    CK(cudaFree(src));
    CK(cudaFree(dst));
    CK(cudaStreamDestroy(s));
    return verdicts();
}
