/*
 * bench_reads.cu - small device-to-host reads (feature: GPUACCEL_COALESCE).
 *
 * A 16 MiB device buffer of u32 is filled by a kernel with seeded,
 * per-element values, then COUNT 4-byte elements are read back to pageable
 * host memory:
 *   --pattern seq     cudaMemcpy of element k, k = 0,1,2,... (wrapping at 16 MiB)
 *   --pattern random  cudaMemcpy of elements at seeded random indices in the first 1 MiB
 *   --pattern item    the PyTorch .item() pattern: cudaMemcpyAsync of element k into a
 *                     pageable host scalar on a stream, then cudaStreamSynchronize
 *   --pattern write   a one-thread kernel adds 1 to a random element of the first 1 MiB,
 *                     then a cudaMemcpy reads it: a write between every read, which
 *                     coalescing cannot serve and must not slow (a solver's residual
 *                     check after each step; no reference)
 *   --stream default  for item: the default (NULL) stream, as PyTorch and CuPy use,
 *                     instead of a created one (--stream created)
 *   --mode reference  the same elements via ONE bulk cudaMemcpy of the index range
 *                     into page-locked memory (allocated before the timing), picked
 *                     on the host
 * The warm-up reads the first 100 elements of the same pattern; then a kernel
 * writes the whole buffer anew with another seed, so nothing it read (and
 * nothing a library kept of it) is valid when the timer starts.
 * Prints "result reads <us per element> ..." and a digest over the values read.
 *
 * usage: bench_reads [--pattern seq|random|item|write] [--stream created|default] [--count N]
 *                    [--mode native|reference] [--seed S]
 */
#include "common.h"

#define BUF_WORDS ((16u << 20) / 4)   /* 16 MiB buffer */
#define REGION_WORDS ((1u << 20) / 4) /* random reads stay in the first 1 MiB */

enum { SEQ, RANDOM, ITEM, WRITE };

__global__ void bump(uint32_t *d, uint32_t i)
{
    d[i] += 1;
}

__global__ void fill(uint32_t *d, unsigned n, uint32_t seed)
{
    for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        d[i] = mix32(seed * 0x9e3779b9u + i);
}

static void read_native(int pattern, const uint32_t *d, const uint32_t *idx, uint32_t *vals,
                        long long n, cudaStream_t st)
{
    if (pattern == ITEM) {
        for (long long k = 0; k < n; k++) {
            uint32_t v; /* pageable host scalar, like a CPU tensor's storage */
            CK(cudaMemcpyAsync(&v, d + idx[k], sizeof v, cudaMemcpyDeviceToHost, st));
            CK(cudaStreamSynchronize(st));
            vals[k] = v;
        }
    } else if (pattern == WRITE) {
        for (long long k = 0; k < n; k++) {
            bump<<<1, 1>>>((uint32_t *)d, idx[k]);
            CK(cudaMemcpy(&vals[k], d + idx[k], sizeof(uint32_t), cudaMemcpyDeviceToHost));
        }
    } else {
        for (long long k = 0; k < n; k++)
            CK(cudaMemcpy(&vals[k], d + idx[k], sizeof(uint32_t), cudaMemcpyDeviceToHost));
    }
}

static void read_reference(const uint32_t *d, const uint32_t *idx, uint32_t *vals, long long n,
                           uint32_t lo, uint32_t hi, uint32_t *stage)
{
    CK(cudaMemcpy(stage, d + lo, (size_t)(hi - lo + 1) * sizeof(uint32_t), cudaMemcpyDeviceToHost));
    for (long long k = 0; k < n; k++)
        vals[k] = stage[idx[k] - lo];
}

int main(int argc, char **argv)
{
    long long count = 10000, seed = 1;
    int pattern = SEQ, reference = 0, default_stream = 0;
    g_usage = "[--pattern seq|random|item|write] [--stream created|default] [--count N] "
              "[--mode native|reference] [--seed S]";
    for (int i = 1; i < argc; i++) {
        if (ARG_IS("--count"))
            count = arg_ll(argc, argv, &i, 1);
        else if (ARG_IS("--seed"))
            seed = arg_ll(argc, argv, &i, 0);
        else if (ARG_IS("--pattern")) {
            const char *p = arg_value(argc, argv, &i);
            if (strcmp(p, "seq") == 0)
                pattern = SEQ;
            else if (strcmp(p, "random") == 0)
                pattern = RANDOM;
            else if (strcmp(p, "item") == 0)
                pattern = ITEM;
            else if (strcmp(p, "write") == 0)
                pattern = WRITE;
            else
                usage_exit(argv[0]);
        } else if (ARG_IS("--stream")) {
            default_stream = arg_either(argc, argv, &i, "created", "default");
        } else if (ARG_IS("--mode")) {
            reference = arg_either(argc, argv, &i, "native", "reference");
        } else
            usage_exit(argv[0]);
    }
    if (reference && pattern == WRITE) {
        fprintf(stderr, "%s: --pattern write has no reference mode\n", argv[0]);
        return 2;
    }
    require_gpu();

    uint32_t *idx = (uint32_t *)malloc((size_t)count * sizeof(uint32_t));
    uint32_t *vals = (uint32_t *)malloc((size_t)count * sizeof(uint32_t));
    uint32_t *stage = NULL;
    if (!idx || !vals) {
        fprintf(stderr, "out of host memory\n");
        return 1;
    }
    uint64_t rng = 0x9e3779b97f4a7c15ULL ^ (uint64_t)seed;
    uint32_t lo = UINT32_MAX, hi = 0;
    for (long long k = 0; k < count; k++) {
        if (pattern == RANDOM || pattern == WRITE) {
            rng ^= rng << 13; /* xorshift64 */
            rng ^= rng >> 7;
            rng ^= rng << 17;
            idx[k] = (uint32_t)(rng >> 32) % REGION_WORDS;
        } else {
            idx[k] = (uint32_t)(k % BUF_WORDS);
        }
        lo = idx[k] < lo ? idx[k] : lo;
        hi = idx[k] > hi ? idx[k] : hi;
    }

    cudaStream_t st = 0;
    uint32_t *d;
    if (!default_stream)
        CK(cudaStreamCreate(&st));
    CK(cudaMalloc((void **)&d, (size_t)BUF_WORDS * sizeof(uint32_t)));
    if (reference)
        CK(cudaMallocHost((void **)&stage, (size_t)(hi - lo + 1) * sizeof(uint32_t)));
    fill<<<1024, 256>>>(d, BUF_WORDS, (uint32_t)seed * 2u + 1u); /* the warm-up's values */
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());

    /* warm-up: first-use costs, on values the timed loop will not see */
    if (reference)
        read_reference(d, idx, vals, count, lo, hi, stage);
    else
        read_native(pattern, d, idx, vals, count < 100 ? count : 100, st);
    CK(cudaDeviceSynchronize());
    fill<<<1024, 256>>>(d, BUF_WORDS, (uint32_t)seed * 2u); /* the values timed */
    CK(cudaGetLastError());
    CK(timer_sync());

    double t0 = now_us();
    if (reference)
        read_reference(d, idx, vals, count, lo, hi, stage);
    else
        read_native(pattern, d, idx, vals, count, st);
    CK(timer_sync());
    double t1 = now_us();

    static const char *names[] = {"seq", "random", "item", "write"};
    printf("result reads %.4f pattern=%s stream=%s count=%lld mode=%s\n",
           (t1 - t0) / (double)count, names[pattern], default_stream ? "default" : "created",
           count, reference ? "reference" : "native");
    print_digest(vals, (size_t)count * sizeof(uint32_t));

    CK(cudaFree(d));
    if (st)
        CK(cudaStreamDestroy(st));
    if (stage)
        CK(cudaFreeHost(stage));
    free(idx);
    free(vals);
    return 0;
}
