/*
 * bench_config.cu - a badly configured kernel (feature: GPUACCEL_TUNE).
 *
 * A bounds-checked 1-D elementwise BabyBear multiply-add over N u32 elements
 * (default 2^24), p = 2^31 - 2^27 + 1:   out[i] = (a[i] * b[i] + c[i] + k) mod p,
 * k the launch's index, so every launch writes new values (as a program's
 * iterations do; a tuner cannot check a launch whose result is already there).
 * The program launches it with 32 threads per block unless --block says
 * otherwise; every block size gives the same output (and digest).
 *   --block B   block size (1..1024)
 *   --search    exhaustive search over B = 32, 64, 96, ..., 1024; prints a
 *               "# block=B us=T" line each, checks every output digest is the
 *               same, and reports the best (the reference for the tuner)
 * Each configuration: one warm-up launch, then --iters launches timed with the
 * host monotonic clock between two cudaDeviceSynchronize calls.
 * Prints "result config <us per launch> block=B ..." and a digest over out[].
 *
 * usage: bench_config [--block B | --search] [--n N] [--iters N] [--seed S]
 */
#include "common.h"

#define BABYBEAR_P 2013265921u /* 2^31 - 2^27 + 1 */

__global__ void fma_mod(uint32_t *out, const uint32_t *a, const uint32_t *b, const uint32_t *c,
                        unsigned n, uint32_t k)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        out[i] = (uint32_t)(((uint64_t)a[i] * b[i] + c[i] + k) % BABYBEAR_P);
}

__global__ void gen(uint32_t *a, uint32_t *b, uint32_t *c, unsigned n, uint32_t seed)
{
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        a[i] = mix32(seed * 0x9e3779b9u + (uint32_t)i) % BABYBEAR_P;
        b[i] = mix32(seed * 0x85ebca6bu + (uint32_t)i) % BABYBEAR_P;
        c[i] = mix32(seed * 0xc2b2ae35u + (uint32_t)i) % BABYBEAR_P;
    }
}

/* Time one block size; leaves the output in out and returns us per launch. */
static double measure(int block, uint32_t *out, const uint32_t *a, const uint32_t *b,
                      const uint32_t *c, unsigned n, long long iters)
{
    unsigned grid = (unsigned)((n + (unsigned long long)block - 1) / block);
    fma_mod<<<grid, block>>>(out, a, b, c, n, 0); /* warm-up */
    CK(cudaGetLastError());
    CK(timer_sync());
    double t0 = now_us();
    for (long long k = 0; k < iters; k++) {
        fma_mod<<<grid, block>>>(out, a, b, c, n, (uint32_t)k + 1);
        CK(cudaGetLastError());
    }
    CK(timer_sync());
    return (now_us() - t0) / (double)iters;
}

static uint64_t output_digest(const uint32_t *out, uint32_t *host, unsigned n)
{
    CK(cudaMemcpy(host, out, (size_t)n * sizeof(uint32_t), cudaMemcpyDeviceToHost));
    return digest_bytes(host, (size_t)n * sizeof(uint32_t));
}

int main(int argc, char **argv)
{
    long long block = 32, n = 1 << 24, iters = 50, seed = 1;
    int search = 0;
    g_usage = "[--block B | --search] [--n N] [--iters N] [--seed S]";
    for (int i = 1; i < argc; i++) {
        if (ARG_IS("--block"))
            block = arg_ll(argc, argv, &i, 1);
        else if (ARG_IS("--n"))
            n = arg_ll(argc, argv, &i, 1);
        else if (ARG_IS("--iters"))
            iters = arg_ll(argc, argv, &i, 1);
        else if (ARG_IS("--seed"))
            seed = arg_ll(argc, argv, &i, 0);
        else if (ARG_IS("--search"))
            search = 1;
        else
            usage_exit(argv[0]);
    }
    if (block > 1024 || n > (1LL << 30))
        usage_exit(argv[0]);
    require_gpu();

    uint32_t *a, *b, *c, *out;
    size_t bytes = (size_t)n * sizeof(uint32_t);
    uint32_t *host = (uint32_t *)malloc(bytes);
    if (!host) {
        fprintf(stderr, "out of host memory\n");
        return 1;
    }
    CK(cudaMalloc((void **)&a, bytes));
    CK(cudaMalloc((void **)&b, bytes));
    CK(cudaMalloc((void **)&c, bytes));
    CK(cudaMalloc((void **)&out, bytes));
    gen<<<1024, 256>>>(a, b, c, (unsigned)n, (uint32_t)seed);
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());

    uint64_t digest = 0;
    if (!search) {
        double us = measure((int)block, out, a, b, c, (unsigned)n, iters);
        digest = output_digest(out, host, (unsigned)n);
        printf("result config %.4f block=%lld n=%lld iters=%lld\n", us, block, n, iters);
    } else {
        int best = 0;
        double best_us = 0;
        for (int B = 32; B <= 1024; B += 32) {
            CK(cudaMemset(out, 0, bytes));
            double us = measure(B, out, a, b, c, (unsigned)n, iters);
            uint64_t d = output_digest(out, host, (unsigned)n);
            printf("# block=%d us=%.4f\n", B, us);
            if (best && d != digest) {
                fprintf(stderr, "bench_config: block %d gives a different output\n", B);
                return 1;
            }
            if (!best || us < best_us) {
                best = B;
                best_us = us;
            }
            digest = d;
        }
        printf("result config %.4f block=%d n=%lld iters=%lld search=1\n", best_us, best, n, iters);
    }
    printf("digest: %016llx\n", (unsigned long long)digest);

    CK(cudaFree(a));
    CK(cudaFree(b));
    CK(cudaFree(c));
    CK(cudaFree(out));
    free(host);
    return 0;
}
