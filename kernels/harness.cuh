/* harness.cuh - what the two comparison harnesses (verify.cu, verify_public.cu)
 * share: CUDA error checks, the seeded generator and the event timer.
 * Owns: nothing stateful. The including file defines HARNESS_NAME (its
 * program name, for messages) before including this. */
#ifndef GA_KERNELS_HARNESS_CUH
#define GA_KERNELS_HARNESS_CUH

#include <cuda_runtime.h>

#include <algorithm>
#include <functional>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <vector>

static void check_cuda(cudaError_t e, const char *what, int line)
{
    if (e != cudaSuccess) {
        fprintf(stderr, HARNESS_NAME ": line %d: %s: %s (%s)\n", line, what,
                cudaGetErrorString(e), cudaGetErrorName(e));
        exit(1);
    }
}
#define CK(call) check_cuda((call), #call, __LINE__)

/* SplitMix64's finalizer: seeds and streams of the generator below. */
static uint64_t mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

struct Rng {
    uint64_t s;
    explicit Rng(uint64_t seed) : s(seed) {}
    uint64_t next() { return mix64(s += 0x9E3779B97F4A7C15ull); }
    uint32_t below(uint32_t n) { return (uint32_t)(next() % n); }
};

/* The median of `reps` timings of fn (CUDA events on the default stream),
 * after two untimed calls (module load, caches, clocks). */
static double median_us(const std::function<void()> &fn, int reps)
{
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    fn();
    fn();
    CK(cudaDeviceSynchronize());
    std::vector<float> t;
    for (int i = 0; i < reps; i++) {
        CK(cudaEventRecord(e0));
        fn();
        CK(cudaEventRecord(e1));
        CK(cudaEventSynchronize(e1));
        float ms = 0;
        CK(cudaEventElapsedTime(&ms, e0, e1));
        t.push_back(ms * 1000.0f);
    }
    CK(cudaGetLastError());
    CK(cudaEventDestroy(e0));
    CK(cudaEventDestroy(e1));
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
}

#endif
