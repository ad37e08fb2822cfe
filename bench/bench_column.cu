/*
 * bench_column.cu - a column accessor that copies a whole column to the host
 * to take one value (feature: GPUACCEL_COALESCE, its mirrors).
 *
 * The public pattern: a STARK prover's GPU column type whose element accessor
 * copies the column back to the host and indexes it (about 3.4 GB of
 * device-to-host traffic per proof at a modest size, the same unchanged
 * columns again and again). Here, per round: a kernel changes a few words of
 * one column, then each of C columns of 2^K words is read whole with a
 * synchronous cudaMemcpy R times, one value taken from each copy. The values
 * taken go into the digest.
 *
 * --mode reference copies each column once per round and takes every value
 * from that copy. Prints "result column <us per round> ...".
 *
 * usage: bench_column [--log-size K] [--columns C] [--reads R] [--rounds N]
 *                     [--mode native|reference] [--seed S]
 */
#include "common.h"

#include <vector>

__global__ void fill_words(uint32_t *p, size_t n, uint32_t seed)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        p[i] = mix32(seed ^ (uint32_t)i);
}

__global__ void touch_few(uint32_t *p, size_t n, uint32_t seed)
{
    uint32_t i = threadIdx.x;
    p[mix32(seed + i) & (n - 1)] ^= seed | 1u;
}

int main(int argc, char **argv)
{
    long long log_n = 16, ncols = 8, reads = 8, rounds = 20, seed = 1;
    int reference = 0;
    g_usage = "[--log-size K] [--columns C] [--reads R] [--rounds N] [--mode native|reference] "
              "[--seed S]";
    const bench_opt_t opts[] = {
        {"--log-size", &log_n, 4},
        {"--columns", &ncols, 1},
        {"--reads", &reads, 1},
        {"--rounds", &rounds, 1},
        {"--seed", &seed, 0},
    };
    parse_args(argc, argv, opts, (int)(sizeof opts / sizeof opts[0]), &reference);
    if (log_n > 28) {
        fprintf(stderr, "%s: --log-size at most 28\n", argv[0]);
        return 2;
    }
    require_gpu();
    size_t n = (size_t)1 << log_n;
    std::vector<uint32_t *> cols((size_t)ncols);
    for (long long c = 0; c < ncols; c++) {
        CK(cudaMalloc((void **)&cols[(size_t)c], n * 4));
        fill_words<<<256, 256>>>(cols[(size_t)c], n, (uint32_t)(seed * 1000 + c));
    }
    CK(cudaGetLastError());
    std::vector<uint32_t> host(n), got;
    double total = 0;
    for (long long r = -1; r < rounds; r++) { /* round -1: warm-up, not timed */
        uint32_t rs = (uint32_t)(seed * 7919 + r + 2);
        touch_few<<<1, 32>>>(cols[(size_t)((uint64_t)rs % (uint64_t)ncols)], n, rs);
        CK(cudaGetLastError());
        CK(timer_sync());
        double t0 = now_us();
        for (long long c = 0; c < ncols; c++) {
            for (long long k = 0; k < reads; k++) {
                if (!reference || k == 0)
                    CK(cudaMemcpy(host.data(), cols[(size_t)c], n * 4, cudaMemcpyDeviceToHost));
                uint32_t v = host[mix32(rs ^ (uint32_t)(c * 977 + k)) & (n - 1)];
                if (r >= 0)
                    got.push_back(v);
            }
        }
        double t1 = now_us();
        if (r >= 0)
            total += t1 - t0;
    }
    printf("result column %.4f log_size=%lld columns=%lld reads=%lld rounds=%lld mode=%s\n",
           total / (double)rounds, log_n, ncols, reads, rounds, reference ? "reference" : "native");
    print_digest(got.data(), got.size() * 4);
    for (uint32_t *c : cols)
        CK(cudaFree(c));
    return 0;
}
