// tune_prog.cu - four kernels the tuner must tell apart (tests/gpu/tune.sh):
//   bounded     bounds-checked 1-D, launched with 32-thread blocks: rewritable
//               keeping the thread count
//   stride      grid-stride, launched with far too many blocks: any grid works
//   shared      a block-wide shared-memory reduction sized for 128 threads:
//               rejected (uses shared memory)
//   partial     per-block partial sums with atomics, no shared memory: every
//               other block size gives other sums: rejected by comparison
// Each kernel runs 5 times on fresh seeded data; prints a digest of all outputs.
#include <cstdio>
#include <cstdint>

#include "check.cuh"


__global__ void bounded(const uint32_t *in, uint32_t *out, uint32_t n)
{
    uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        out[i] = in[i] * 2654435761u + (in[i] >> 7);
}

__global__ void stride(const uint32_t *in, uint32_t *out, uint32_t n)
{
    for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        out[i] = in[i] ^ (in[i] << 3);
}

__global__ void shared(const uint32_t *in, uint32_t *out, uint32_t n)
{
    __shared__ uint32_t s[128];
    uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    s[threadIdx.x] = i < n ? in[i] : 0;
    __syncthreads();
    for (unsigned w = 64; w > 0; w >>= 1) {
        if (threadIdx.x < w)
            s[threadIdx.x] += s[threadIdx.x + w];
        __syncthreads();
    }
    if (threadIdx.x == 0)
        out[blockIdx.x] = s[0];
}

__global__ void partial(const uint32_t *in, uint32_t *out, uint32_t n)
{
    uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        atomicAdd(&out[blockIdx.x], in[i]);
}

static uint64_t fnv(const uint32_t *p, size_t n, uint64_t h)
{
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 1099511628211ull;
    return h;
}

int main()
{
    skip_without_gpu();
    const uint32_t n = 1 << 22;
    uint32_t *in, *out, *h = new uint32_t[n];
    CK(cudaMalloc(&in, n * 4));
    CK(cudaMalloc(&out, n * 4));
    uint64_t digest = 1469598103934665603ull;
    for (int round = 0; round < 5; round++) {
        for (uint32_t i = 0; i < n; i++)
            h[i] = (i + 1) * 2246822519u ^ (uint32_t)round * 3266489917u;
        CK(cudaMemcpy(in, h, n * 4, cudaMemcpyHostToDevice));
        bounded<<<n / 32, 32>>>(in, out, n);
        CK(cudaMemcpy(h, out, n * 4, cudaMemcpyDeviceToHost));
        digest = fnv(h, n, digest);
        stride<<<n / 32, 32>>>(in, out, n);
        CK(cudaMemcpy(h, out, n * 4, cudaMemcpyDeviceToHost));
        digest = fnv(h, n, digest);
        CK(cudaMemset(out, 0, n * 4));
        shared<<<n / 128, 128>>>(in, out, n);
        CK(cudaMemcpy(h, out, n / 128 * 4, cudaMemcpyDeviceToHost));
        digest = fnv(h, n / 128, digest);
        CK(cudaMemset(out, 0, n * 4));
        partial<<<n / 256, 256>>>(in, out, n);
        CK(cudaMemcpy(h, out, n / 256 * 4, cudaMemcpyDeviceToHost));
        digest = fnv(h, n / 256, digest);
    }
    CK(cudaGetLastError());
    printf("digest: %016llx\n", (unsigned long long)digest);
    return 0;
}
