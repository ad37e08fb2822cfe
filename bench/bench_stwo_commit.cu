/*
 * bench_stwo_commit.cu - a Circle-FFT and Merkle commitment in the manner of
 * NethermindEth/stwo-gpu (features: GPUACCEL_LAZY_SYNC with GPUACCEL_GRAPHS).
 *
 * The public pattern: stwo-gpu's CUDA entry points launch one kernel and then
 * call cudaDeviceSynchronize (cuda/src/bit_reverse.cu, cuda/src/blake2s.cu:
 * commit_on_first_layer and commit_on_layer_with_previous, one launch per
 * Merkle layer; cuda/src/circle.cu one launch per FFT layer), and the Rust
 * backend calls them column by column. Per commit, here:
 *   for each of C columns: load (evaluate the column from its seed), bit-reverse,
 *     L butterfly layers over M31 (p = 2^31 - 1), each launch followed by
 *     cudaDeviceSynchronize;
 *   one Merkle leaf layer hashing every column at each index, then L layers
 *     halving to the root, each launch followed by cudaDeviceSynchronize;
 *   a 32-byte read of the root.
 * The hash is a small mixing compression, not Blake2s: the pattern of launches
 * and waits is the point, and every mode computes the same roots.
 *
 * --mode reference drops the synchronizations between kernels (one read of the
 * root per commit): what a hand-written program that knows its stream order
 * runs. Prints "result stwo_commit <us per commit> ..." and a digest of every
 * root.
 *
 * usage: bench_stwo_commit [--log-size L] [--columns C] [--iters N]
 *                          [--mode native|reference] [--seed S]
 */
#include "common.h"

#define P31 0x7fffffffu

__device__ static inline uint32_t m31_reduce(uint64_t x)
{
    uint32_t r = (uint32_t)(x & P31) + (uint32_t)(x >> 31);
    r = (r & P31) + (r >> 31);
    return r == P31 ? 0 : r;
}

__device__ static inline uint32_t m31_add(uint32_t a, uint32_t b) { return m31_reduce((uint64_t)a + b); }
__device__ static inline uint32_t m31_sub(uint32_t a, uint32_t b) { return m31_reduce((uint64_t)a + P31 - b); }
__device__ static inline uint32_t m31_mul(uint32_t a, uint32_t b) { return m31_reduce((uint64_t)a * b); }

__global__ void load_column(uint32_t *col, uint32_t n, uint32_t seed)
{
    uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        col[i] = mix32(seed ^ mix32(i)) & P31;
}

__global__ void bit_reverse(uint32_t *col, uint32_t n, int log_n)
{
    uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    uint32_t j = __brev(i) >> (32 - log_n);
    if (i < j) {
        uint32_t t = col[i];
        col[i] = col[j];
        col[j] = t;
    }
}

/* One butterfly layer: pairs (k, k + half) within blocks of 2*half. */
__global__ void fft_layer(uint32_t *col, uint32_t n, uint32_t half, uint32_t layer_seed)
{
    uint32_t t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= n / 2)
        return;
    uint32_t k = t % half, base = (t / half) * 2 * half;
    uint32_t tw = (mix32(layer_seed ^ k) & P31) | 1u;
    uint32_t a = col[base + k], b = m31_mul(col[base + k + half], tw);
    col[base + k] = m31_add(a, b);
    col[base + k + half] = m31_sub(a, b);
}

struct hash8 {
    uint32_t s[8];
};

__device__ static inline void absorb(hash8 *h, uint32_t w)
{
    for (int j = 0; j < 8; j++) {
        h->s[j] = mix32(h->s[j] ^ w) + h->s[(j + 1) & 7];
        w = h->s[j];
    }
}

__global__ void merkle_leaves(uint32_t **cols, uint32_t ncols, uint32_t n, hash8 *out)
{
    uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    hash8 h = {{1, 2, 3, 4, 5, 6, 7, 8}};
    for (uint32_t c = 0; c < ncols; c++)
        absorb(&h, cols[c][i]);
    out[i] = h;
}

__global__ void merkle_layer(const hash8 *prev, uint32_t n, hash8 *out)
{
    uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    hash8 h = prev[2 * i];
    for (int j = 0; j < 8; j++)
        absorb(&h, prev[2 * i + 1].s[j]);
    out[i] = h;
}

static bool g_sync_each = true;

/* stwo-gpu's shape: every launch is followed by a device synchronization. */
static void after_launch(void)
{
    CK(cudaGetLastError());
    if (g_sync_each)
        CK(cudaDeviceSynchronize());
}

static unsigned blocks(uint32_t n) { return (n + 255) / 256; }

static void commit(uint32_t **cols, uint32_t **dcols, uint32_t ncols, int log_n, uint32_t seed,
                   hash8 *layers[], hash8 *root)
{
    uint32_t n = 1u << log_n;
    for (uint32_t c = 0; c < ncols; c++) {
        load_column<<<blocks(n), 256>>>(cols[c], n, seed + c);
        after_launch();
        bit_reverse<<<blocks(n), 256>>>(cols[c], n, log_n);
        after_launch();
        for (int l = 0; l < log_n; l++) {
            fft_layer<<<blocks(n / 2), 256>>>(cols[c], n, 1u << l, seed * 131u + (uint32_t)l);
            after_launch();
        }
    }
    merkle_leaves<<<blocks(n), 256>>>(dcols, ncols, n, layers[0]);
    after_launch();
    for (int l = 1; l <= log_n; l++) {
        uint32_t m = n >> l;
        merkle_layer<<<blocks(m), m < 256 ? m : 256>>>(layers[l - 1], m, layers[l]);
        after_launch();
    }
    CK(cudaMemcpy(root, layers[log_n], sizeof(hash8), cudaMemcpyDeviceToHost));
}

int main(int argc, char **argv)
{
    long long log_n = 16, ncols = 8, iters = 20, seed = 1;
    int reference = 0;
    g_usage = "[--log-size L] [--columns C] [--iters N] [--mode native|reference] [--seed S]";
    const bench_opt_t opts[] = {
        {"--log-size", &log_n, 4},
        {"--columns", &ncols, 1},
        {"--iters", &iters, 1},
        {"--seed", &seed, 0},
    };
    parse_args(argc, argv, opts, (int)(sizeof opts / sizeof opts[0]), &reference);
    if (log_n > 26 || ncols > 64) {
        fprintf(stderr, "%s: --log-size at most 26, --columns at most 64\n", argv[0]);
        return 2;
    }
    require_gpu();
    g_sync_each = !reference;
    uint32_t n = 1u << log_n;
    uint32_t *cols[64], **dcols;
    for (long long c = 0; c < ncols; c++)
        CK(cudaMalloc((void **)&cols[c], (size_t)n * 4));
    CK(cudaMalloc((void **)&dcols, sizeof cols));
    CK(cudaMemcpy(dcols, cols, sizeof cols, cudaMemcpyHostToDevice));
    hash8 *layers[27];
    for (long long l = 0; l <= log_n; l++)
        CK(cudaMalloc((void **)&layers[l], sizeof(hash8) * (size_t)(n >> l)));
    hash8 *roots = (hash8 *)calloc((size_t)iters, sizeof(hash8)), warm;
    for (int w = 0; w < 2; w++) /* module loading and first-launch costs out of the timing */
        commit(cols, dcols, (uint32_t)ncols, (int)log_n, (uint32_t)seed + 977u, layers, &warm);
    CK(timer_sync());
    double t0 = now_us();
    for (long long it = 0; it < iters; it++)
        commit(cols, dcols, (uint32_t)ncols, (int)log_n, (uint32_t)(seed + it), layers, &roots[it]);
    CK(timer_sync());
    double t1 = now_us();
    printf("result stwo_commit %.4f log_size=%lld columns=%lld iters=%lld mode=%s\n",
           (t1 - t0) / (double)iters, log_n, ncols, iters, reference ? "reference" : "native");
    print_digest(roots, (size_t)iters * sizeof(hash8));
    for (long long l = 0; l <= log_n; l++)
        CK(cudaFree(layers[l]));
    for (long long c = 0; c < ncols; c++)
        CK(cudaFree(cols[c]));
    CK(cudaFree(dcols));
    free(roots);
    return 0;
}
