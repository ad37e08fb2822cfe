/* prover.cu - GPU STARK-style prover over BabyBear (main program).
 *
 * Owns: the device-side pipeline (trace -> LDE -> Merkle commitment -> FRI
 * -> query openings) and the command line.  The kernels live in kernels.cuh
 * (so that kernels/verify.cu can compile the originals); host-side pieces
 * (transcript, proof layout, digest, CPU reference prover, CPU verifier)
 * come from reference.c through prover.h.
 *
 * This is deliberately a naive first GPU port, the workload libgpuaccel is
 * measured on: radix-2 NTT with one launch per butterfly layer, 64-thread
 * 1-D bounds-checked kernels, one launch per Merkle level, cudaMalloc /
 * cudaFree around every step, and query openings read back one 4-byte
 * element per cudaMemcpy.  Do not "fix" these patterns.
 *
 * Build (static cudart; nvcc compiles reference.c as C with the host gcc):
 *   nvcc -O2 -arch=sm_90 -o prover prover.cu reference.c
 * Usage: see --help or README.md. */
#include <cuda_runtime.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "prover.h"
#include "field.h"
#include "poseidon2.h"
#include "protocol.h"
#include "kernels.cuh"

#define BLOCK 64

/* ---- error handling ------------------------------------------------------ */

static void check_cuda(cudaError_t e, const char *what, const char *file, int line)
{
    if (e != cudaSuccess) {
        fprintf(stderr, "prover: %s:%d: %s: %s (%s)\n", file, line, what,
                cudaGetErrorString(e), cudaGetErrorName(e));
        exit(1);
    }
}
#define CK(call) check_cuda((call), #call, __FILE__, __LINE__)
#define LAUNCHED(name) check_cuda(cudaGetLastError(), "launch " name, __FILE__, __LINE__)

static unsigned grid_for(size_t threads)
{
    return (unsigned)((threads + BLOCK - 1) / BLOCK);
}

/* ---- device pipeline helpers -------------------------------------------- */

/* Natural-order NTT of size 2^log_n in place on the device. */
static void gpu_ntt(uint32_t *d, uint32_t log_n, int inverse)
{
    uint32_t n = 1u << log_n, half, lg;
    if (log_n == 0)
        return;
    bit_reverse<<<grid_for(n), BLOCK>>>(d, n, log_n);
    LAUNCHED("bit_reverse");
    for (lg = 1, half = 1; half < n; half <<= 1, lg++) {
        uint32_t root = bb_root_of_unity(lg);
        ntt_layer<<<grid_for(n / 2), BLOCK>>>(d, n, half, inverse ? bb_inv(root) : root);
        LAUNCHED("ntt_layer");
    }
    if (inverse) {
        scale<<<grid_for(n), BLOCK>>>(d, n, bb_inv(n));
        LAUNCHED("scale");
    }
}

/* Builds the Merkle tree (layout as in reference.c: leaves first, root
 * last) into d_tree and reads the root back. */
static void gpu_merkle(const uint32_t *d_data, uint32_t rows, uint32_t width, uint32_t stride,
                       uint32_t *d_tree, uint32_t *root)
{
    size_t in_off = 0, out_off = rows;
    hash_leaves<<<grid_for(rows), BLOCK>>>(d_data, d_tree, rows, width, stride);
    LAUNCHED("hash_leaves");
    for (uint32_t count = rows / 2; count >= 1; count /= 2) {
        hash_nodes<<<grid_for(count), BLOCK>>>(d_tree + in_off * 8, d_tree + out_off * 8, count);
        LAUNCHED("hash_nodes");
        in_off = out_off;
        out_off += count;
    }
    CK(cudaMemcpy(root, d_tree + ((size_t)2 * rows - 2) * 8, 8 * sizeof(uint32_t),
                  cudaMemcpyDeviceToHost));
}

/* One 4-byte device-to-host copy per element, on purpose. */
static uint32_t read_word(const uint32_t *d, size_t off)
{
    uint32_t w;
    CK(cudaMemcpy(&w, d + off, sizeof(w), cudaMemcpyDeviceToHost));
    return w;
}

static void read_path(const uint32_t *d_tree, uint32_t log_leaves, uint32_t idx, uint32_t *out)
{
    size_t off = 0, count = (size_t)1 << log_leaves;
    for (uint32_t l = 0; l < log_leaves; l++) {
        for (int e = 0; e < 8; e++)
            out[8 * l + e] = read_word(d_tree, (off + (idx ^ 1u)) * 8 + e);
        off += count;
        count >>= 1;
        idx >>= 1;
    }
}

static double stage_end(double *stage_ms, int stage, double t0)
{
    CK(cudaDeviceSynchronize());
    double t1 = now_ms();
    stage_ms[stage] += t1 - t0;
    return t1;
}

/* ---- GPU prover ---------------------------------------------------------- */

static void gpu_prove(const prover_params_t *pp, proof_t *p, double *stage_ms)
{
    const uint32_t log_n = pp->log_n, n = 1u << log_n, W = pp->cols, Q = pp->queries;
    const uint32_t log_N = p->log_lde, N = 1u << log_N, L = p->num_layers;
    uint32_t *d_trace, *d_lde, *d_main_tree;
    uint32_t *d_codes[PROVER_MAX_FRI_LAYERS + 1], *d_trees[PROVER_MAX_FRI_LAYERS];
    transcript_t t;
    double tstart = now_ms(), t0 = tstart;

    /* trace */
    CK(cudaMalloc(&d_trace, (size_t)n * W * sizeof(uint32_t)));
    trace_kernel<<<grid_for((size_t)n * W), BLOCK>>>(d_trace, n, W, (uint32_t)pp->seed,
                                                     (uint32_t)(pp->seed >> 32));
    LAUNCHED("trace_kernel");
    t0 = stage_end(stage_ms, STAGE_TRACE, t0);

    /* LDE, one column at a time through a scratch buffer */
    CK(cudaMalloc(&d_lde, (size_t)N * W * sizeof(uint32_t)));
    for (uint32_t c = 0; c < W; c++) {
        uint32_t *d_scratch;
        CK(cudaMalloc(&d_scratch, (size_t)N * sizeof(uint32_t)));
        CK(cudaMemcpy(d_scratch, d_trace + (size_t)c * n, (size_t)n * sizeof(uint32_t),
                      cudaMemcpyDeviceToDevice));
        gpu_ntt(d_scratch, log_n, 1);
        coset_shift<<<grid_for(n), BLOCK>>>(d_scratch, n, BB_GENERATOR);
        LAUNCHED("coset_shift");
        CK(cudaMemset(d_scratch + n, 0, (size_t)(N - n) * sizeof(uint32_t)));
        gpu_ntt(d_scratch, log_N, 0);
        CK(cudaMemcpy(d_lde + (size_t)c * N, d_scratch, (size_t)N * sizeof(uint32_t),
                      cudaMemcpyDeviceToDevice));
        CK(cudaFree(d_scratch));
    }
    CK(cudaFree(d_trace));
    t0 = stage_end(stage_ms, STAGE_LDE, t0);

    /* main commitment */
    CK(cudaMalloc(&d_main_tree, ((size_t)2 * N - 1) * 8 * sizeof(uint32_t)));
    gpu_merkle(d_lde, N, W, N, d_main_tree, p->main_root);
    t0 = stage_end(stage_ms, STAGE_COMMIT, t0);

    /* FRI */
    transcript_init(&t, pp);
    transcript_absorb(&t, p->main_root, 8);
    uint32_t alpha = transcript_squeeze(&t);
    CK(cudaMalloc(&d_codes[0], (size_t)N * sizeof(uint32_t)));
    combine_columns<<<grid_for(N), BLOCK>>>(d_lde, d_codes[0], N, W, alpha);
    LAUNCHED("combine_columns");
    for (uint32_t i = 0; i < L; i++) {
        uint32_t half = (N >> i) / 2;
        CK(cudaMalloc(&d_trees[i], ((size_t)2 * half - 1) * 8 * sizeof(uint32_t)));
        gpu_merkle(d_codes[i], half, 2, half, d_trees[i], p->fri_roots[i]);
        transcript_absorb(&t, p->fri_roots[i], 8);
        uint32_t beta = transcript_squeeze(&t);
        CK(cudaMalloc(&d_codes[i + 1], (size_t)half * sizeof(uint32_t)));
        fri_fold<<<grid_for(half), BLOCK>>>(
            d_codes[i], d_codes[i + 1], half, beta,
            bb_inv(bb_pow(BB_GENERATOR, (uint64_t)1 << i)),
            bb_inv(bb_root_of_unity(log_N - i)));
        LAUNCHED("fri_fold");
    }
    CK(cudaMemcpy(p->final_vals, d_codes[L], (size_t)p->final_size * sizeof(uint32_t),
                  cudaMemcpyDeviceToHost));
    CK(cudaFree(d_codes[L]));
    transcript_absorb(&t, p->final_vals, p->final_size);
    t0 = stage_end(stage_ms, STAGE_FRI, t0);

    /* queries: every opened element is its own cudaMemcpy */
    for (uint32_t q = 0; q < Q; q++) {
        uint32_t pos = transcript_squeeze(&t) & (N - 1u), idx = pos;
        uint32_t *blk = p->openings + (size_t)q * p->query_words;
        p->positions[q] = pos;
        for (uint32_t c = 0; c < W; c++)
            blk[proof_row_offset(p) + c] = read_word(d_lde, (size_t)c * N + pos);
        read_path(d_main_tree, log_N, pos, blk + proof_main_path_offset(p));
        for (uint32_t i = 0; i < L; i++) {
            uint32_t half = (N >> i) / 2, j = idx & (half - 1u);
            uint32_t *f = blk + proof_fri_offset(p, i);
            f[0] = read_word(d_codes[i], j);
            f[1] = read_word(d_codes[i], (size_t)j + half);
            read_path(d_trees[i], proof_fri_depth(p, i), j, f + 2);
            idx = j;
        }
    }
    for (uint32_t i = 0; i < L; i++) {
        CK(cudaFree(d_codes[i]));
        CK(cudaFree(d_trees[i]));
    }
    CK(cudaFree(d_main_tree));
    CK(cudaFree(d_lde));
    t0 = stage_end(stage_ms, STAGE_QUERIES, t0);
    stage_ms[STAGE_TOTAL] += t0 - tstart;
}

/* ---- command line --------------------------------------------------------- */

static void usage(FILE *f)
{
    fprintf(f,
            "usage: prover [options]\n"
            "  --log-n N      trace rows 2^N, N in [%d, %d] (default 18)\n"
            "  --cols W       trace columns, W in [1, %d] (default 8)\n"
            "  --queries Q    FRI queries, Q in [1, %d] (default 64)\n"
            "  --proofs K     statements to prove, seeds S..S+K-1, K in [1, %d] (default 1)\n"
            "  --seed S       base seed, unsigned 64-bit, decimal or 0x-hex (default 1)\n"
            "  --reference    prove on the CPU only (no CUDA call; small sizes)\n"
            "  --verify       check every proof with the CPU verifier\n"
            "  --help         this text\n"
            "stdout: one line 'digest: <16 hex>'; stderr: 'stage <name> <ms>' lines.\n"
            "exit: 0 ok, 1 CUDA error / proof rejected, 2 bad option, 77 no CUDA device.\n",
            PROVER_MIN_LOG_N, PROVER_MAX_LOG_N, PROVER_MAX_COLS, PROVER_MAX_QUERIES,
            PROVER_MAX_PROOFS);
}

static uint64_t parse_uint(const char *opt, const char *val, uint64_t lo, uint64_t hi, int base)
{
    char *end;
    unsigned long long v;
    errno = 0;
    if (!val) {
        fprintf(stderr, "prover: %s: missing value\n", opt);
        exit(2);
    }
    v = strtoull(val, &end, base);
    if (errno || end == val || *end || val[0] == '-' || v < lo || v > hi) {
        if (hi == UINT64_MAX)
            fprintf(stderr, "prover: %s: expected an unsigned 64-bit integer, got '%s'\n", opt,
                    val);
        else
            fprintf(stderr, "prover: %s: expected an integer in [%" PRIu64 ", %" PRIu64
                            "], got '%s'\n",
                    opt, lo, hi, val);
        exit(2);
    }
    return (uint64_t)v;
}

int main(int argc, char **argv)
{
    prover_params_t pp = {18, 8, 64, 1};
    uint64_t base_seed = 1, proofs = 1;
    int reference = 0, verify = 0;
    double stage_ms[STAGE_COUNT] = {0};

    for (int a = 1; a < argc; a++) {
        const char *arg = argv[a], *val = NULL, *eq = strchr(arg, '=');
        char name[32];
        size_t len = eq ? (size_t)(eq - arg) : strlen(arg);
        if (len >= sizeof(name))
            len = sizeof(name) - 1;
        memcpy(name, arg, len);
        name[len] = 0;
        int takes_value = !strcmp(name, "--log-n") || !strcmp(name, "--cols") ||
                          !strcmp(name, "--queries") || !strcmp(name, "--proofs") ||
                          !strcmp(name, "--seed");
        if (takes_value)
            val = eq ? eq + 1 : (a + 1 < argc ? argv[++a] : NULL);
        else if (eq) {
            fprintf(stderr, "prover: %s: takes no value\n", name);
            return 2;
        }
        if (!strcmp(name, "--log-n"))
            pp.log_n = (uint32_t)parse_uint(name, val, PROVER_MIN_LOG_N, PROVER_MAX_LOG_N, 10);
        else if (!strcmp(name, "--cols"))
            pp.cols = (uint32_t)parse_uint(name, val, 1, PROVER_MAX_COLS, 10);
        else if (!strcmp(name, "--queries"))
            pp.queries = (uint32_t)parse_uint(name, val, 1, PROVER_MAX_QUERIES, 10);
        else if (!strcmp(name, "--proofs"))
            proofs = parse_uint(name, val, 1, PROVER_MAX_PROOFS, 10);
        else if (!strcmp(name, "--seed"))
            base_seed = parse_uint(name, val, 0, UINT64_MAX, 0);
        else if (!strcmp(name, "--reference"))
            reference = 1;
        else if (!strcmp(name, "--verify"))
            verify = 1;
        else if (!strcmp(name, "--help") || !strcmp(name, "-h")) {
            usage(stdout);
            return 0;
        } else {
            fprintf(stderr, "prover: unknown option '%s' (see --help)\n", arg);
            return 2;
        }
    }

    if (!reference) {
        int devices = 0;
        if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
            fprintf(stderr, "prover: no CUDA device\n");
            return 77;
        }
        CK(cudaFree(0)); /* create the context outside the timed stages */
    }

    uint64_t digest = PROVER_DIGEST_INIT;
    for (uint64_t k = 0; k < proofs; k++) {
        proof_t proof;
        pp.seed = base_seed + k;
        if (proof_alloc(&proof, &pp)) {
            fprintf(stderr, "prover: out of host memory\n");
            return 1;
        }
        if (reference) {
            if (reference_prove(&pp, &proof, stage_ms)) {
                fprintf(stderr, "prover: out of host memory\n");
                return 1;
            }
        } else {
            gpu_prove(&pp, &proof, stage_ms);
        }
        if (verify) {
            char why[160];
            if (verify_proof(&pp, &proof, why, sizeof(why))) {
                fprintf(stderr, "prover: proof %" PRIu64 " (seed %" PRIu64 ") rejected: %s\n",
                        k, pp.seed, why);
                return 1;
            }
        }
        digest = proof_digest(digest, &proof);
        proof_free(&proof);
    }
    if (verify)
        fprintf(stderr, "verify: %" PRIu64 " proof(s) accepted\n", proofs);
    for (int s = 0; s < STAGE_COUNT; s++)
        fprintf(stderr, "stage %s %.3f\n", stage_names[s], stage_ms[s]);
    printf("digest: %016" PRIx64 "\n", digest);
    return 0;
}
