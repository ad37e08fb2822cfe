/*
 * bench_alloc.cu - allocation churn (feature: GPUACCEL_POOL).
 *
 * Loop N times: allocate SIZE bytes, free the block; on every 16th block
 * (--touch-every N; 0: never, the allocator alone) first launch a tiny kernel that writes words spread over the
 * whole block (first and last word included) and reads two back into acc[i],
 * so the memory is really used. The kernel is cheap and rare on purpose: the
 * loop measures the allocator (native cudaMalloc+cudaFree on an H200: ~3.5 us a pair
 * up to 1 MiB, where the driver sub-allocates; ~90 us at 64 MiB, ~470 us at 512 MiB).
 *   --mode native     cudaMalloc / kernel / cudaFree          (what the pool intercepts)
 *   --mode reference  cudaMallocAsync / kernel / cudaFreeAsync on a stream, using
 *                     the default memory pool with an unlimited release threshold
 *                     (the hand-written pool the library is compared to)
 * Prints "result alloc <us per malloc+free pair> ..." and a digest over acc[].
 *
 * usage: bench_alloc [--size BYTES] [--iters N] [--touch-every N] [--mode native|reference]
 *                    [--seed S]
 */
#include "common.h"

#define TOUCH_THREADS 256

__global__ void touch(uint32_t *p, size_t nwords, uint32_t seed, uint32_t *acc, int iter)
{
    /* m words spread over the buffer, written in parallel; thread 0 then reads
     * back two of them (one written by another thread: visible after the
     * barrier) so the digest depends on memory the allocation really holds.
     * Cheap on purpose: the loop must measure the allocator, not this kernel. */
    unsigned m = nwords < TOUCH_THREADS ? (unsigned)nwords : TOUCH_THREADS;
    unsigned t = threadIdx.x;
#define POS(k) (m > 1 ? (size_t)(k) * (nwords - 1) / (m - 1) : 0)
    if (t < m)
        p[POS(t)] = mix32(seed ^ mix32((uint32_t)iter * TOUCH_THREADS + t));
    __syncthreads();
    if (t == 0)
        acc[iter] = p[POS(0)] * 31u + p[POS(m - 1)];
#undef POS
}

static int touch_every = 16; /* launch the touch kernel on every Nth allocation; 0: never */

static void churn(int reference, size_t size, int first, int n, uint32_t seed,
                  uint32_t *acc, cudaStream_t st)
{
    for (int i = first; i < first + n; i++) {
        uint32_t *p;
        if (reference)
            CK(cudaMallocAsync((void **)&p, size, st));
        else
            CK(cudaMalloc((void **)&p, size));
        if (touch_every > 0 && i % touch_every == 0) {
            touch<<<1, TOUCH_THREADS, 0, st>>>(p, size / 4, seed, acc, i);
            CK(cudaGetLastError());
        }
        if (reference)
            CK(cudaFreeAsync(p, st));
        else
            CK(cudaFree(p));
    }
}

int main(int argc, char **argv)
{
    long long size = 1 << 20, iters = 1000, seed = 1;
    int reference = 0;
    g_usage = "[--size BYTES] [--iters N] [--touch-every N] [--mode native|reference] [--seed S]";
    for (int i = 1; i < argc; i++) {
        if (ARG_IS("--size"))
            size = arg_ll(argc, argv, &i, 4);
        else if (ARG_IS("--iters"))
            iters = arg_ll(argc, argv, &i, 1);
        else if (ARG_IS("--seed"))
            seed = arg_ll(argc, argv, &i, 0);
        else if (ARG_IS("--touch-every"))
            touch_every = (int)arg_ll(argc, argv, &i, 0);
        else if (ARG_IS("--mode"))
            reference = arg_either(argc, argv, &i, "native", "reference");
        else
            usage_exit(argv[0]);
    }
    require_gpu();

    int dev;
    cudaStream_t st;
    uint32_t *acc;
    CK(cudaGetDevice(&dev));
    CK(cudaStreamCreate(&st));
    CK(cudaMalloc((void **)&acc, (size_t)iters * sizeof(uint32_t)));
    CK(cudaMemset(acc, 0, (size_t)iters * sizeof(uint32_t))); /* untouched rounds stay 0 */
    if (reference) {
        cudaMemPool_t pool;
        uint64_t threshold = UINT64_MAX;
        CK(cudaDeviceGetDefaultMemPool(&pool, dev));
        CK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold));
    }

    int warm = iters < 20 ? (int)iters : 20;
    churn(reference, (size_t)size, 0, warm, (uint32_t)seed, acc, st);
    CK(timer_sync());

    double t0 = now_us();
    churn(reference, (size_t)size, 0, (int)iters, (uint32_t)seed, acc, st);
    CK(timer_sync());
    double t1 = now_us();

    uint32_t *h = (uint32_t *)malloc((size_t)iters * sizeof(uint32_t));
    if (!h) {
        fprintf(stderr, "out of host memory\n");
        return 1;
    }
    CK(cudaMemcpy(h, acc, (size_t)iters * sizeof(uint32_t), cudaMemcpyDeviceToHost));
    printf("result alloc %.4f size=%lld iters=%lld mode=%s\n", (t1 - t0) / (double)iters,
           size, iters, reference ? "reference" : "native");
    print_digest(h, (size_t)iters * sizeof(uint32_t));

    free(h);
    CK(cudaFree(acc));
    CK(cudaStreamDestroy(st));
    return 0;
}
