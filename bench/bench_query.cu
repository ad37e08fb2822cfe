/*
 * bench_query.cu - a STARK prover's query phase: scattered 4-byte reads of
 * tens of buffers (feature: GPUACCEL_COALESCE, its windows and mirrors).
 *
 * The public pattern: RISC Zero's CUDA HAL reads one element with a
 * synchronous copy (risc0/zkp/src/hal/cuda.rs, get_at), once per Merkle layer
 * per query when it opens a branch, and its FRI prover reads the two
 * neighbours of each query in every fold layer (risc0/zkp/src/prove/fri.rs);
 * column openings read one element of each committed column. Here, per
 * round: kernels write N columns of 2^L words, a Merkle tree kept as one
 * buffer per layer (8-word digests) and M = L/2 fold layers; then Q queries at
 * seeded random positions each read, with a synchronous 4-byte cudaMemcpy,
 * one word of every column, the first word of the sibling digest in every
 * Merkle layer, and two neighbours in every fold layer. The timer covers the
 * query phases only; every value read goes into the digest.
 *
 * --mode reference copies every buffer to the host once per round (what a
 * hand-written port would do) and reads there. Prints "result query <us per
 * round> ...".
 *
 * usage: bench_query [--log-size L] [--columns N] [--queries Q] [--rounds R]
 *                    [--mode native|reference] [--seed S]
 */
#include "common.h"

#include <vector>

__global__ void fill_words(uint32_t *p, size_t n, uint32_t seed)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        p[i] = mix32(seed ^ (uint32_t)i ^ (uint32_t)(i >> 32) * 0x9e3779b9u);
}

struct buf {
    uint32_t *d;
    size_t words;
    std::vector<uint32_t> host; /* reference mode */
};

static uint32_t read_word(const buf &b, size_t i, bool reference)
{
    if (reference)
        return b.host[i];
    uint32_t v;
    CK(cudaMemcpy(&v, b.d + i, 4, cudaMemcpyDeviceToHost));
    return v;
}

int main(int argc, char **argv)
{
    long long log_n = 16, ncols = 16, queries = 64, rounds = 4, seed = 1;
    int reference = 0;
    g_usage = "[--log-size L] [--columns N] [--queries Q] [--rounds R] [--mode native|reference] "
              "[--seed S]";
    const bench_opt_t opts[] = {
        {"--log-size", &log_n, 4},
        {"--columns", &ncols, 1},
        {"--queries", &queries, 1},
        {"--rounds", &rounds, 1},
        {"--seed", &seed, 0},
    };
    parse_args(argc, argv, opts, (int)(sizeof opts / sizeof opts[0]), &reference);
    if (log_n > 26) {
        fprintf(stderr, "%s: --log-size at most 26\n", argv[0]);
        return 2;
    }
    require_gpu();
    size_t n = (size_t)1 << log_n;
    int folds = (int)log_n / 2;
    std::vector<buf> cols((size_t)ncols), tree((size_t)log_n + 1), fri((size_t)folds);
    for (auto &b : cols)
        b.words = n;
    for (long long l = 0; l <= log_n; l++)
        tree[(size_t)l].words = (n >> l) * 8;
    for (int m = 0; m < folds; m++)
        fri[(size_t)m].words = n >> (m + 1);
    std::vector<buf *> all;
    for (auto *v : {&cols, &tree, &fri})
        for (auto &b : *v) {
            CK(cudaMalloc((void **)&b.d, b.words * 4));
            all.push_back(&b);
        }
    std::vector<uint32_t> got;
    got.reserve((size_t)(rounds * queries * (ncols + log_n + 2 * folds)));
    double total = 0;
    for (long long r = -1; r < rounds; r++) { /* round -1: warm-up, not timed */
        uint32_t rs = (uint32_t)(seed * 7919 + r);
        for (size_t k = 0; k < all.size(); k++)
            fill_words<<<256, 256>>>(all[k]->d, all[k]->words, rs * 131u + (uint32_t)k);
        CK(cudaGetLastError());
        CK(timer_sync());
        double t0 = now_us();
        if (reference)
            for (buf *b : all) {
                b->host.resize(b->words);
                CK(cudaMemcpy(b->host.data(), b->d, b->words * 4, cudaMemcpyDeviceToHost));
            }
        for (long long q = 0; q < queries; q++) {
            size_t idx = mix32(rs ^ mix32((uint32_t)q)) & (n - 1);
            uint32_t acc = 0;
            for (auto &c : cols)
                acc = acc * 31u + read_word(c, idx, reference);
            for (long long l = 0; l < log_n; l++)
                acc = acc * 31u + read_word(tree[(size_t)l], ((idx >> l) ^ 1) * 8, reference);
            for (int m = 0; m < folds; m++) {
                size_t pair = (idx >> (m + 1)) & ~(size_t)1 & ((n >> (m + 1)) - 1);
                acc = acc * 31u + read_word(fri[(size_t)m], pair, reference);
                acc = acc * 31u + read_word(fri[(size_t)m], pair | 1, reference);
            }
            if (r >= 0)
                got.push_back(acc);
        }
        double t1 = now_us();
        if (r >= 0)
            total += t1 - t0;
    }
    printf("result query %.4f log_size=%lld columns=%lld queries=%lld rounds=%lld mode=%s\n",
           total / (double)rounds, log_n, ncols, queries, rounds,
           reference ? "reference" : "native");
    print_digest(got.data(), got.size() * 4);
    for (buf *b : all)
        CK(cudaFree(b->d));
    return 0;
}
