/*
 * bench_column.cu - a column accessor that copies a whole column to the host
 * to take one value (feature: GPUACCEL_COALESCE: large reads kept in
 * page-locked copies).
 *
 * The public pattern: a STARK prover's GPU column type whose element accessor
 * copies the column back to the host and indexes it (about 3.4 GB of
 * device-to-host traffic per proof at a modest size, the same unchanged
 * columns again and again). Here C columns of 2^K words are written by a
 * kernel with seeded, per-element values; then, per round: a kernel changes
 * R words of one column (those the round then takes from it), and each
 * column is read whole with a synchronous cudaMemcpy R times, one value taken
 * from each copy. The digest is over the values taken: a stale copy of the
 * changed column, or a misplaced one, changes it.
 *
 * Every round is timed. The warm-up writes the columns and makes whole reads
 * of scratch buffers of a column's size (the copy path's first-use costs:
 * warm_reads in common.h): none of the columns is read before the timer
 * starts.
 *
 * --mode reference: the best hand-written accessor keeps a page-locked host
 * copy of each column (allocated before the timing) until the program writes
 * the column: a column is copied when it is first read and again after the
 * kernel that changes it, and every value is taken from its copy. Prints
 * "result column <us per round> ...".
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

/* The position the k-th read of column c takes in the round of seed rs. */
__host__ __device__ static inline size_t position(uint32_t rs, long long c, long long k, size_t n)
{
    return mix32(rs ^ (uint32_t)(c * 977 + k)) & (n - 1);
}

/* Changes the words the round's reads of column c take, one after another
 * (two reads may take one word: one thread keeps the result deterministic). */
__global__ void touch(uint32_t *p, size_t n, uint32_t rs, long long c, int reads)
{
    for (int k = 0; k < reads; k++)
        p[position(rs, c, k, n)] ^= mix32(rs + (uint32_t)k) | 1u;
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
    if (log_n > 28 || reads > 1 << 20) {
        fprintf(stderr, "%s: --log-size at most 28, --reads at most 2^20\n", argv[0]);
        return 2;
    }
    require_gpu();
    size_t n = (size_t)1 << log_n;
    std::vector<uint32_t *> cols((size_t)ncols), copies((size_t)ncols, (uint32_t *)NULL);
    std::vector<char> valid((size_t)ncols, 0); /* reference: copies[c] holds column c */
    for (long long c = 0; c < ncols; c++) {
        CK(cudaMalloc((void **)&cols[(size_t)c], n * 4));
        fill_words<<<256, 256>>>(cols[(size_t)c], n, (uint32_t)(seed * 1000 + c));
        if (reference)
            CK(cudaMallocHost((void **)&copies[(size_t)c], n * 4));
    }
    CK(cudaGetLastError());
    std::vector<uint32_t> host(n), got;
    got.reserve((size_t)(rounds * ncols * reads));
    /* warm-up: whole reads of buffers no round reads */
    CK(warm_reads(reference ? copies[0] : host.data(), n * 4));
    double total = 0;
    for (long long r = 0; r < rounds; r++) {
        uint32_t rs = (uint32_t)(seed * 7919 + r + 2);
        long long changed = (long long)((uint64_t)rs % (uint64_t)ncols);
        touch<<<1, 1>>>(cols[(size_t)changed], n, rs, changed, (int)reads);
        CK(cudaGetLastError());
        valid[(size_t)changed] = 0; /* the reference knows what it wrote */
        CK(timer_sync());
        double t0 = now_us();
        for (long long c = 0; c < ncols; c++) {
            for (long long k = 0; k < reads; k++) {
                const uint32_t *from = host.data();
                if (reference) {
                    if (!valid[(size_t)c])
                        CK(cudaMemcpy(copies[(size_t)c], cols[(size_t)c], n * 4,
                                      cudaMemcpyDeviceToHost));
                    valid[(size_t)c] = 1;
                    from = copies[(size_t)c];
                } else {
                    CK(cudaMemcpy(host.data(), cols[(size_t)c], n * 4, cudaMemcpyDeviceToHost));
                }
                got.push_back(from[position(rs, c, k, n)]);
            }
        }
        total += now_us() - t0;
    }
    printf("result column %.4f log_size=%lld columns=%lld reads=%lld rounds=%lld mode=%s\n",
           total / (double)rounds, log_n, ncols, reads, rounds, reference ? "reference" : "native");
    print_digest(got.data(), got.size() * 4);
    for (long long c = 0; c < ncols; c++) {
        CK(cudaFree(cols[(size_t)c]));
        if (copies[(size_t)c])
            CK(cudaFreeHost(copies[(size_t)c]));
    }
    return 0;
}
