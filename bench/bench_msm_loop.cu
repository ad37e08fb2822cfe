/*
 * bench_msm_loop.cu - one stream and one scratch allocation per operation, the
 * shape of ICICLE v2's MSM entry point (features: GPUACCEL_STREAMS,
 * GPUACCEL_ASYNC_POOL, and the rest of the library's switches).
 *
 * The public pattern: ICICLE v2's msm (icicle/src/msm/msm.cu) creates a
 * stream for the call when none is given, takes its bucket and scratch memory
 * with cudaMallocAsync on it, runs a few kernels, copies the result back,
 * synchronizes the stream, frees the scratch with cudaFreeAsync and destroys
 * the stream; older RISC Zero CUDA code made a stream per kernel batch the
 * same way. Per operation, here: cudaStreamCreate; cudaMallocAsync of SIZE
 * bytes of buckets; four small kernels (clear the buckets and the count,
 * scatter the points' contributions into them, reduce them to a 4-byte count);
 * cudaMemcpyAsync of the count to the host; cudaStreamSynchronize;
 * cudaFreeAsync; cudaStreamDestroy. The points live in one long-lived buffer.
 *
 * --mode reference is the hand-written fix: one stream made once, and the
 * default pool's release threshold raised so freed scratch stays mapped.
 * Prints "result msm_loop <us per operation> ..." and a digest of the counts.
 *
 * usage: bench_msm_loop [--size BYTES] [--points N] [--iters N]
 *                       [--mode native|reference] [--seed S]
 */
#include "common.h"

__global__ void clear_buckets(uint32_t *b, uint32_t n)
{
    for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        b[i] = 0;
}

__global__ void scatter(const uint32_t *points, uint32_t npoints, uint32_t *b, uint32_t nb,
                        uint32_t seed)
{
    uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < npoints) {
        uint32_t v = mix32(points[i] ^ seed);
        atomicAdd(&b[v % nb], v >> 20);
    }
}

/* Every block folds a strided share of the buckets and adds it to the count:
 * addition commutes, so the count is the same whatever order blocks finish in. */
__global__ void reduce_count(const uint32_t *b, uint32_t nb, uint32_t *count)
{
    uint32_t s = 0;
    for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < nb; i += gridDim.x * blockDim.x)
        s += b[i] * (i | 1u);
    atomicAdd(count, s);
}

static uint32_t one_op(bool reference, cudaStream_t keep, const uint32_t *points, uint32_t npoints,
                       size_t size, uint32_t *dcount, uint32_t seed)
{
    cudaStream_t st = keep;
    if (!reference)
        CK(cudaStreamCreate(&st));
    uint32_t *buckets, nb = (uint32_t)(size / 4), count = 0;
    CK(cudaMallocAsync((void **)&buckets, size, st));
    clear_buckets<<<1024, 256, 0, st>>>(buckets, nb);
    clear_buckets<<<1, 1, 0, st>>>(dcount, 1);
    scatter<<<(npoints + 255) / 256, 256, 0, st>>>(points, npoints, buckets, nb, seed);
    reduce_count<<<1024, 256, 0, st>>>(buckets, nb, dcount);
    CK(cudaGetLastError());
    CK(cudaMemcpyAsync(&count, dcount, sizeof count, cudaMemcpyDeviceToHost, st));
    CK(cudaStreamSynchronize(st));
    CK(cudaFreeAsync(buckets, st));
    if (!reference)
        CK(cudaStreamDestroy(st));
    return count;
}

__global__ void make_points(uint32_t *p, uint32_t n, uint32_t seed)
{
    uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        p[i] = mix32(seed + i);
}

int main(int argc, char **argv)
{
    long long size = 4 << 20, npoints = 1 << 16, iters = 200, seed = 1;
    int reference = 0;
    g_usage = "[--size BYTES] [--points N] [--iters N] [--mode native|reference] [--seed S]";
    const bench_opt_t opts[] = {
        {"--size", &size, 1024},
        {"--points", &npoints, 1},
        {"--iters", &iters, 1},
        {"--seed", &seed, 0},
    };
    parse_args(argc, argv, opts, (int)(sizeof opts / sizeof opts[0]), &reference);
    require_gpu();
    int dev;
    cudaStream_t keep = NULL;
    uint32_t *points, *dcount, *counts = (uint32_t *)calloc((size_t)iters, sizeof(uint32_t));
    CK(cudaGetDevice(&dev));
    CK(cudaMalloc((void **)&points, (size_t)npoints * 4));
    CK(cudaMalloc((void **)&dcount, 4));
    make_points<<<(unsigned)((npoints + 255) / 256), 256>>>(points, (uint32_t)npoints, (uint32_t)seed);
    CK(cudaGetLastError());
    if (reference) {
        cudaMemPool_t pool;
        uint64_t threshold = UINT64_MAX;
        CK(cudaDeviceGetDefaultMemPool(&pool, dev));
        CK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold));
        CK(cudaStreamCreate(&keep));
    }
    for (int w = 0; w < 5; w++)
        (void)one_op(reference, keep, points, (uint32_t)npoints, (size_t)size, dcount, 7u + w);
    CK(timer_sync());
    double t0 = now_us();
    for (long long it = 0; it < iters; it++)
        counts[it] = one_op(reference, keep, points, (uint32_t)npoints, (size_t)size, dcount,
                            (uint32_t)(seed * 1000 + it));
    CK(timer_sync());
    double t1 = now_us();
    printf("result msm_loop %.4f size=%lld points=%lld iters=%lld mode=%s\n",
           (t1 - t0) / (double)iters, size, npoints, iters, reference ? "reference" : "native");
    print_digest(counts, (size_t)iters * sizeof(uint32_t));
    if (keep)
        CK(cudaStreamDestroy(keep));
    CK(cudaFree(points));
    CK(cudaFree(dcount));
    free(counts);
    return 0;
}
