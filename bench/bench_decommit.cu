/*
 * bench_decommit.cu - a Merkle decommitment that reads each queried value by
 * copying its whole column to the host (feature: GPUACCEL_COALESCE: large
 * reads kept in page-locked copies).
 *
 * The public pattern: NethermindEth/stwo-gpu's column type answers
 * Column::at(index) with `self.to_cpu()[index]` (stwo_gpu_backend/src/column.rs,
 * marked "highly inefficient"); to_cpu is to_vec, a fresh Vec the column's
 * size filled by one cudaMemcpy device-to-host
 * (stwo_gpu_backend/src/cuda/base_field_vec.rs, cuda/include/utils.cuh).
 * stwo's MerkleProver::decommit, which stwo-gpu runs unchanged
 * (starkware-libs/stwo crates/prover/src/core/vcs/prover.rs, at ce5b975, the
 * revision stwo_gpu_backend/Cargo.toml pins), calls at() on every column of a
 * layer for each queried position, positions ascending.
 *
 * Here, per round: a kernel writes C columns of 2^N u32 values, seeded, per
 * element and per column, with a new seed every round (a new commitment);
 * then Q positions (sorted, duplicates dropped, as decommit requires) are
 * read: for each position, for each column, the whole column is copied with
 * cudaMemcpy into a freshly allocated host buffer (malloc, freed after the
 * value is taken, as the Vec is dropped), and the one value taken. The digest
 * is over every value taken, in order.
 *
 * Every round is timed. The warm-up makes whole reads of scratch buffers of
 * a column's size (the copy path's first-use costs: warm_reads in common.h):
 * no column is read before the timer starts.
 *
 * --mode reference: each column copied once per round into page-locked
 * memory (allocated before the timing), every value taken from there.
 * Prints "result decommit <us per round> ...".
 *
 * usage: bench_decommit [--log-size N] [--columns C] [--queries Q] [--rounds R]
 *                       [--mode native|reference] [--seed S]
 */
#include "common.h"

#include <algorithm>
#include <vector>

__global__ void fill_words(uint32_t *p, size_t n, uint32_t seed)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        p[i] = mix32(seed ^ mix32((uint32_t)i));
}

int main(int argc, char **argv)
{
    long long log_n = 16, ncols = 8, queries = 32, rounds = 4, seed = 1;
    int reference = 0;
    g_usage = "[--log-size N] [--columns C] [--queries Q] [--rounds R] [--mode native|reference] "
              "[--seed S]";
    const bench_opt_t opts[] = {
        {"--log-size", &log_n, 4},
        {"--columns", &ncols, 1},
        {"--queries", &queries, 1},
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
    std::vector<uint32_t *> cols((size_t)ncols), pinned((size_t)ncols, (uint32_t *)NULL);
    for (long long c = 0; c < ncols; c++) {
        CK(cudaMalloc((void **)&cols[(size_t)c], n * 4));
        if (reference)
            CK(cudaMallocHost((void **)&pinned[(size_t)c], n * 4));
    }
    {   /* warm-up: whole reads of buffers no round reads */
        uint32_t *to = reference ? pinned[0] : (uint32_t *)malloc(n * 4);
        if (!to) {
            fprintf(stderr, "out of host memory\n");
            return 1;
        }
        CK(warm_reads(to, n * 4));
        if (!reference)
            free(to);
    }
    std::vector<uint32_t> got;
    got.reserve((size_t)(rounds * queries * ncols));
    std::vector<size_t> pos;
    double total = 0;
    long long taken = 0;
    for (long long r = 0; r < rounds; r++) {
        uint32_t rs = (uint32_t)(seed * 7919 + r);
        for (long long c = 0; c < ncols; c++)
            fill_words<<<256, 256>>>(cols[(size_t)c], n, rs * 131u + (uint32_t)c);
        CK(cudaGetLastError());
        pos.clear();
        for (long long q = 0; q < queries; q++)
            pos.push_back(mix32(rs ^ mix32((uint32_t)q + 0x51ed27u)) & (n - 1));
        std::sort(pos.begin(), pos.end());
        pos.erase(std::unique(pos.begin(), pos.end()), pos.end());
        CK(timer_sync());
        double t0 = now_us();
        if (reference) {
            for (long long c = 0; c < ncols; c++)
                CK(cudaMemcpy(pinned[(size_t)c], cols[(size_t)c], n * 4, cudaMemcpyDeviceToHost));
            for (size_t p : pos)
                for (long long c = 0; c < ncols; c++)
                    got.push_back(pinned[(size_t)c][p]);
        } else {
            for (size_t p : pos)
                for (long long c = 0; c < ncols; c++) { /* Column::at(p): to_cpu()[p] */
                    uint32_t *fresh = (uint32_t *)malloc(n * 4);
                    if (!fresh) {
                        fprintf(stderr, "out of host memory\n");
                        return 1;
                    }
                    CK(cudaMemcpy(fresh, cols[(size_t)c], n * 4, cudaMemcpyDeviceToHost));
                    got.push_back(fresh[p]);
                    free(fresh);
                }
        }
        total += now_us() - t0;
        taken += (long long)pos.size() * ncols;
    }
    printf("result decommit %.4f log_size=%lld columns=%lld queries=%lld rounds=%lld "
           "values=%lld mode=%s\n", total / (double)rounds, log_n, ncols, queries, rounds, taken,
           reference ? "reference" : "native");
    print_digest(got.data(), got.size() * 4);
    for (long long c = 0; c < ncols; c++) {
        CK(cudaFree(cols[(size_t)c]));
        if (pinned[(size_t)c])
            CK(cudaFreeHost(pinned[(size_t)c]));
    }
    return 0;
}
