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
 * buffer per layer (8-word digests) and M = L/2 fold layers, with seeded
 * per-element values and a new seed every round; then Q queries at seeded
 * random positions each read, with a synchronous 4-byte cudaMemcpy, one word
 * of every column, the first word of the sibling digest in every Merkle
 * layer, and two neighbours in every fold layer. The timer covers the query
 * phases only; the digest is over every value read, in order.
 *
 * Every round is timed. The warm-up only writes the buffers and reads a few
 * words of a scratch buffer (the copy path's first-use costs): it reads none
 * of the query buffers, so a library learns the query pattern inside the
 * first timed round, as it would in a program's one query phase.
 *
 * --mode reference: the best hand-written query phase, which copies only what
 * it reads: the round's positions go to the device as a kernel argument, one
 * small kernel gathers every value the queries read into a device buffer, and
 * one copy brings them to page-locked memory (buffers allocated before the
 * timing; the kernel's first launch is in the warm-up). Prints "result query
 * <us per round> ...".
 *
 * usage: bench_query [--log-size L] [--columns N] [--queries Q] [--rounds R]
 *                    [--mode native|reference] [--seed S]
 */
#include "common.h"

#include <vector>

#define QUERIES_PER_LAUNCH 256 /* positions passed in one kernel argument (1 KiB) */

__global__ void fill_words(uint32_t *p, size_t n, uint32_t seed)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        p[i] = mix32(seed ^ (uint32_t)i ^ (uint32_t)(i >> 32) * 0x9e3779b9u);
}

struct positions {
    uint32_t idx[QUERIES_PER_LAUNCH];
};

/* The reference's gather: out[q * per + j] is the j-th value query q reads
 * (the order read_query reads them in). bufs: the columns, the tree's layers,
 * the fold layers, in that order. */
__global__ void gather(const uint32_t *const *bufs, int ncols, int log_n, int folds, size_t n,
                       positions pos, int nq, uint32_t *out)
{
    int per = ncols + log_n + 2 * folds;
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= nq * per)
        return;
    int q = t / per, j = t % per;
    size_t idx = pos.idx[q];
    uint32_t v;
    if (j < ncols) {
        v = bufs[j][idx];
    } else if (j < ncols + log_n) {
        int l = j - ncols;
        v = bufs[ncols + l][((idx >> l) ^ 1) * 8];
    } else {
        int k = j - ncols - log_n, m = k / 2;
        size_t pair = (idx >> (m + 1)) & ~(size_t)1 & ((n >> (m + 1)) - 1);
        v = bufs[ncols + log_n + 1 + m][pair | (size_t)(k & 1)];
    }
    out[t] = v;
}

struct buf {
    uint32_t *d;
    size_t words;
};

static uint32_t read_word(const buf &b, size_t i)
{
    uint32_t v;
    CK(cudaMemcpy(&v, b.d + i, 4, cudaMemcpyDeviceToHost));
    return v;
}

static size_t position(uint32_t rs, long long q, size_t n)
{
    return mix32(rs ^ mix32((uint32_t)q)) & (n - 1);
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
    if (log_n > 26 || ncols > 4096) {
        fprintf(stderr, "%s: --log-size at most 26, --columns at most 4096\n", argv[0]);
        return 2;
    }
    require_gpu();
    size_t n = (size_t)1 << log_n;
    int folds = (int)log_n / 2;
    int per = (int)ncols + (int)log_n + 2 * folds; /* values one query reads */
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

    /* The reference's buffers, made before any timing. */
    const uint32_t **dbufs = NULL;
    uint32_t *dout = NULL, *hout = NULL;
    cudaStream_t st = 0;
    if (reference) {
        std::vector<const uint32_t *> ptrs;
        for (buf *b : all)
            ptrs.push_back(b->d);
        CK(cudaMalloc((void **)&dbufs, ptrs.size() * sizeof(uint32_t *)));
        CK(cudaMemcpy(dbufs, ptrs.data(), ptrs.size() * sizeof(uint32_t *),
                      cudaMemcpyHostToDevice));
        CK(cudaMalloc((void **)&dout, (size_t)queries * per * 4));
        CK(cudaMallocHost((void **)&hout, (size_t)queries * per * 4));
        CK(cudaStreamCreate(&st));
    }

    std::vector<uint32_t> got;
    got.reserve((size_t)(rounds * queries * per));
    double total = 0;
    for (long long r = -1; r < rounds; r++) { /* round -1: the warm-up, not timed */
        uint32_t rs = (uint32_t)(seed * 7919 + r);
        for (size_t k = 0; k < all.size(); k++)
            fill_words<<<256, 256>>>(all[k]->d, all[k]->words, rs * 131u + (uint32_t)k);
        CK(cudaGetLastError());
        CK(timer_sync());
        if (r < 0 && !reference) {
            /* First-use costs of a small synchronous read, on a buffer the
             * queries never read. */
            uint32_t *scratch, v;
            CK(cudaMalloc((void **)&scratch, 4096));
            fill_words<<<1, 256>>>(scratch, 1024, rs);
            CK(cudaGetLastError());
            for (int k = 0; k < 16; k++)
                CK(cudaMemcpy(&v, scratch + k * 61, 4, cudaMemcpyDeviceToHost));
            CK(cudaFree(scratch));
            CK(timer_sync());
            continue;
        }
        double t0 = now_us();
        if (reference) {
            for (long long q0 = 0; q0 < queries; q0 += QUERIES_PER_LAUNCH) {
                positions pos;
                int nq = (int)(queries - q0 < QUERIES_PER_LAUNCH ? queries - q0
                                                                 : QUERIES_PER_LAUNCH);
                for (int q = 0; q < nq; q++)
                    pos.idx[q] = (uint32_t)position(rs, q0 + q, n);
                int threads = nq * per;
                gather<<<(threads + 255) / 256, 256, 0, st>>>(dbufs, (int)ncols, (int)log_n, folds,
                                                              n, pos, nq, dout + q0 * per);
                CK(cudaGetLastError());
            }
            CK(cudaMemcpyAsync(hout, dout, (size_t)queries * per * 4, cudaMemcpyDeviceToHost, st));
            CK(cudaStreamSynchronize(st));
            if (r >= 0)
                got.insert(got.end(), hout, hout + queries * per);
        } else {
            for (long long q = 0; q < queries; q++) {
                size_t idx = position(rs, q, n);
                for (auto &c : cols)
                    got.push_back(read_word(c, idx));
                for (long long l = 0; l < log_n; l++)
                    got.push_back(read_word(tree[(size_t)l], ((idx >> l) ^ 1) * 8));
                for (int m = 0; m < folds; m++) {
                    size_t pair = (idx >> (m + 1)) & ~(size_t)1 & ((n >> (m + 1)) - 1);
                    got.push_back(read_word(fri[(size_t)m], pair));
                    got.push_back(read_word(fri[(size_t)m], pair | 1));
                }
            }
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
    if (reference) {
        CK(cudaFree(dbufs));
        CK(cudaFree(dout));
        CK(cudaFreeHost(hout));
        CK(cudaStreamDestroy(st));
    }
    return 0;
}
