/*
 * bench_hostmem.cu - memory calls besides cudaMalloc that provers repeat
 * (features: GPUACCEL_ASYNC_POOL, GPUACCEL_PINNED).
 *
 *   --op mallocasync  N x (cudaMallocAsync SIZE on a stream, a kernel writing
 *                     the block, cudaFreeAsync, cudaStreamSynchronize): the
 *                     pattern of sppark's Dmalloc (util/gpu_t.cuh: an
 *                     allocation then a sync) and of ICICLE's MSM scratch
 *                     buffers. --mode reference raises the default pool's
 *                     release threshold first (the hand-written fix).
 *   --op mallochost   N x (cudaMallocHost SIZE, write the first and last word,
 *                     cudaFreeHost): per-call staging buffers for uploads.
 *                     --mode reference allocates once and reuses the buffer.
 * Prints "result <op> <us per iteration> ..." and a digest of what the loop
 * wrote (identical in every mode). p50= is the median over ten batches of
 * iterations of their time per iteration: a cost paid once in the loop (the
 * library starting something) moves the mean but not p50; a cost paid every
 * iteration moves both.
 *
 * usage: bench_hostmem --op mallocasync|mallochost [--size BYTES] [--iters N]
 *                      [--mode native|reference] [--seed S]
 */
#include "common.h"

__global__ void touch(uint32_t *p, size_t nwords, uint32_t v, uint32_t *acc, int iter)
{
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t k = i; k < nwords; k += stride * 64) /* every 64th stride: cheap */
        p[k] = v ^ (uint32_t)k;
    __syncthreads();
    if (i == 0)
        acc[iter] = p[0] * 31u + p[((nwords - 1) / (stride * 64)) * stride * 64];
}

/* Batches of the timed loop: the time after each, for p50= (stamp NULL in the
 * warm-up). */
enum { BATCHES = 10 };
static void stamp(double *at, int i, int iters)
{
    int per = iters < BATCHES ? 1 : iters / BATCHES;
    if (at && (i + 1) % per == 0 && (i + 1) / per <= BATCHES)
        at[(i + 1) / per - 1] = now_us();
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The median batch's time per iteration, from the loop's start and stamps. */
static double batch_p50(double t0, const double *at, int iters)
{
    int per = iters < BATCHES ? 1 : iters / BATCHES, n = iters < BATCHES ? iters : BATCHES;
    double d[BATCHES];
    for (int k = 0; k < n; k++)
        d[k] = (at[k] - (k ? at[k - 1] : t0)) / per;
    qsort(d, (size_t)n, sizeof d[0], cmp_double);
    return n % 2 ? d[n / 2] : (d[n / 2 - 1] + d[n / 2]) / 2;
}

static void mallocasync(bool reference, size_t size, int iters, uint32_t seed, uint32_t *acc,
                        cudaStream_t st, double *at)
{
    for (int i = 0; i < iters; i++) {
        uint32_t *p;
        CK(cudaMallocAsync((void **)&p, size, st));
        touch<<<32, 256, 0, st>>>(p, size / 4, mix32(seed + i), acc, i);
        CK(cudaGetLastError());
        CK(cudaFreeAsync(p, st));
        CK(cudaStreamSynchronize(st));
        stamp(at, i, iters);
    }
    (void)reference;
}

static void mallochost(bool reference, size_t size, int iters, uint32_t seed, uint32_t *out,
                       double *at)
{
    uint32_t *keep = NULL;
    if (reference)
        CK(cudaMallocHost((void **)&keep, size));
    for (int i = 0; i < iters; i++) {
        uint32_t *p = keep;
        if (!reference)
            CK(cudaMallocHost((void **)&p, size));
        p[0] = mix32(seed + i);
        p[size / 4 - 1] = p[0] ^ 0x5a5a5a5au;
        out[i] = p[0] * 31u + p[size / 4 - 1];
        if (!reference)
            CK(cudaFreeHost(p));
        stamp(at, i, iters);
    }
    if (reference)
        CK(cudaFreeHost(keep));
}

int main(int argc, char **argv)
{
    long long size = 1 << 20, iters = 200, seed = 1;
    int reference = 0, host = 0;
    g_usage = "--op mallocasync|mallochost [--size BYTES] [--iters N] [--mode native|reference] "
              "[--seed S]";
    for (int i = 1; i < argc; i++) {
        if (ARG_IS("--op"))
            host = arg_either(argc, argv, &i, "mallocasync", "mallochost");
        else if (ARG_IS("--size"))
            size = arg_ll(argc, argv, &i, 8);
        else if (ARG_IS("--iters"))
            iters = arg_ll(argc, argv, &i, 1);
        else if (ARG_IS("--seed"))
            seed = arg_ll(argc, argv, &i, 0);
        else if (ARG_IS("--mode"))
            reference = arg_either(argc, argv, &i, "native", "reference");
        else
            usage_exit(argv[0]);
    }
    require_gpu();
    int dev;
    cudaStream_t st;
    uint32_t *acc, *h = (uint32_t *)calloc((size_t)iters, sizeof(uint32_t));
    CK(cudaGetDevice(&dev));
    CK(cudaStreamCreate(&st));
    CK(cudaMalloc((void **)&acc, (size_t)iters * sizeof(uint32_t)));
    if (reference && !host) {
        cudaMemPool_t pool;
        uint64_t threshold = UINT64_MAX;
        CK(cudaDeviceGetDefaultMemPool(&pool, dev));
        CK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold));
    }
    int warm = iters < 5 ? (int)iters : 5;
    double at[BATCHES];
    if (host)
        mallochost(reference, (size_t)size, warm, (uint32_t)seed, h, NULL);
    else
        mallocasync(reference, (size_t)size, warm, (uint32_t)seed, acc, st, NULL);
    CK(timer_sync());
    double t0 = now_us();
    if (host)
        mallochost(reference, (size_t)size, (int)iters, (uint32_t)seed, h, at);
    else
        mallocasync(reference, (size_t)size, (int)iters, (uint32_t)seed, acc, st, at);
    CK(timer_sync());
    double t1 = now_us();
    if (!host)
        CK(cudaMemcpy(h, acc, (size_t)iters * sizeof(uint32_t), cudaMemcpyDeviceToHost));
    printf("result %s %.4f size=%lld iters=%lld mode=%s p50=%.4f\n",
           host ? "mallochost" : "mallocasync", (t1 - t0) / (double)iters, size, iters,
           reference ? "reference" : "native", batch_p50(t0, at, (int)iters));
    print_digest(h, (size_t)iters * sizeof(uint32_t));
    free(h);
    CK(cudaFree(acc));
    CK(cudaStreamDestroy(st));
    return 0;
}
