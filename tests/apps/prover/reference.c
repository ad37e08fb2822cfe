/* reference.c - CPU reference prover and verifier (pure C11, no CUDA).
 *
 * Owns: proof sizing/allocation, the Fiat-Shamir transcript, the reference
 * NTT / LDE / Merkle / FRI / query pipeline (same math as prover.cu, so the
 * proofs are bit-identical), the verifier, the proof digest and the stage
 * timer.  Build alone with: gcc -std=c11 -O2 -c reference.c
 *
 * Transcript (Poseidon2 duplex sponge, state s[16]):
 *   init:    s = 0; s[8] = log_n, s[9] = cols, s[10] = queries,
 *            s[11..14] = seed as four 16-bit limbs (low first),
 *            s[15] = 0x5354524b; permute.
 *   absorb:  per chunk of 8 words (zero padded): s[i] += v[i]; permute.
 *   squeeze: permute; return s[0].
 * Protocol order: absorb main root -> alpha; per FRI layer i: absorb root
 * -> beta_i; absorb the F final values; then Q squeezes, each masked with
 * N - 1, give the query positions. */
#define _POSIX_C_SOURCE 199309L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "prover.h"
#include "field.h"
#include "poseidon2.h"
#include "protocol.h"

const char *const stage_names[STAGE_COUNT] = {"trace", "lde",     "commit",
                                              "fri",   "queries", "total"};

double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

/* ---- proof layout ------------------------------------------------------ */

size_t proof_row_offset(const proof_t *p)
{
    (void)p;
    return 0;
}

size_t proof_main_path_offset(const proof_t *p)
{
    return p->cols;
}

uint32_t proof_fri_depth(const proof_t *p, uint32_t layer)
{
    return p->log_lde - layer - 1u;
}

size_t proof_fri_offset(const proof_t *p, uint32_t layer)
{
    size_t off = proof_main_path_offset(p) + (size_t)p->log_lde * 8u;
    uint32_t i;
    for (i = 0; i < layer; i++)
        off += 2u + (size_t)proof_fri_depth(p, i) * 8u;
    return off;
}

const char *params_check(const prover_params_t *pp)
{
    if (pp->log_n < PROVER_MIN_LOG_N || pp->log_n > PROVER_MAX_LOG_N)
        return "--log-n";
    if (pp->cols < 1 || pp->cols > PROVER_MAX_COLS)
        return "--cols";
    if (pp->queries < 1 || pp->queries > PROVER_MAX_QUERIES)
        return "--queries";
    return NULL;
}

int proof_alloc(proof_t *p, const prover_params_t *pp)
{
    memset(p, 0, sizeof(*p));
    if (params_check(pp))
        return -1;
    p->log_lde = pp->log_n + PR_LOG_BLOWUP;
    p->cols = pp->cols;
    p->queries = pp->queries;
    p->num_layers = p->log_lde > PR_FRI_LOG_FINAL ? p->log_lde - PR_FRI_LOG_FINAL : 0u;
    p->final_size = 1u << (p->log_lde - p->num_layers);
    p->query_words = (uint32_t)proof_fri_offset(p, p->num_layers);
    p->positions = (uint32_t *)calloc(p->queries, sizeof(uint32_t));
    p->openings = (uint32_t *)calloc((size_t)p->queries * p->query_words, sizeof(uint32_t));
    if (!p->positions || !p->openings) {
        proof_free(p);
        return -1;
    }
    return 0;
}

void proof_free(proof_t *p)
{
    free(p->positions);
    free(p->openings);
    p->positions = NULL;
    p->openings = NULL;
}

uint64_t proof_digest(uint64_t h, const proof_t *p)
{
    size_t i, nq = (size_t)p->query_words;
    uint32_t q;
#define FNV_WORD(w)                                                    \
    do {                                                               \
        uint32_t w_ = (w);                                             \
        int b_;                                                        \
        for (b_ = 0; b_ < 4; b_++) {                                   \
            h ^= (w_ >> (8 * b_)) & 0xffu;                             \
            h *= 0x100000001b3ull;                                     \
        }                                                              \
    } while (0)
    for (i = 0; i < 8; i++)
        FNV_WORD(p->main_root[i]);
    for (q = 0; q < p->num_layers; q++)
        for (i = 0; i < 8; i++)
            FNV_WORD(p->fri_roots[q][i]);
    for (i = 0; i < p->final_size; i++)
        FNV_WORD(p->final_vals[i]);
    for (q = 0; q < p->queries; q++) {
        FNV_WORD(p->positions[q]);
        for (i = 0; i < nq; i++)
            FNV_WORD(p->openings[(size_t)q * nq + i]);
    }
#undef FNV_WORD
    return h;
}

/* ---- transcript -------------------------------------------------------- */

void transcript_init(transcript_t *t, const prover_params_t *pp)
{
    int i;
    memset(t->s, 0, sizeof(t->s));
    t->s[8] = pp->log_n;
    t->s[9] = pp->cols;
    t->s[10] = pp->queries;
    for (i = 0; i < 4; i++)
        t->s[11 + i] = (uint32_t)(pp->seed >> (16 * i)) & 0xffffu;
    t->s[15] = 0x5354524bu;
    p2_permute(t->s);
}

void transcript_absorb(transcript_t *t, const uint32_t *v, uint32_t n)
{
    uint32_t start, i;
    for (start = 0; start < n; start += P2_RATE) {
        for (i = 0; i < P2_RATE && start + i < n; i++)
            t->s[i] = bb_add(t->s[i], v[start + i]);
        p2_permute(t->s);
    }
}

uint32_t transcript_squeeze(transcript_t *t)
{
    p2_permute(t->s);
    return t->s[0];
}

/* ---- NTT --------------------------------------------------------------- */

static uint32_t bit_rev(uint32_t x, uint32_t bits)
{
    uint32_t r = 0, i;
    for (i = 0; i < bits; i++)
        r |= ((x >> i) & 1u) << (bits - 1u - i);
    return r;
}

/* Bit reversal, then radix-2 DIT layers (as the GPU kernels do). */
void ref_ntt(uint32_t *a, uint32_t log_n, int inverse)
{
    uint32_t n = 1u << log_n, i, half, lg;
    for (i = 0; i < n; i++) {
        uint32_t j = bit_rev(i, log_n);
        if (i < j) {
            uint32_t t = a[i];
            a[i] = a[j];
            a[j] = t;
        }
    }
    for (lg = 1, half = 1; half < n; half <<= 1, lg++) {
        uint32_t root = bb_root_of_unity(lg), g, k;
        if (inverse)
            root = bb_inv(root);
        for (g = 0; g < n; g += 2u * half) {
            uint32_t w = 1;
            for (k = 0; k < half; k++) {
                uint32_t u = a[g + k], v = bb_mul(a[g + k + half], w);
                a[g + k] = bb_add(u, v);
                a[g + k + half] = bb_sub(u, v);
                w = bb_mul(w, root);
            }
        }
    }
    if (inverse) {
        uint32_t ninv = bb_inv(n);
        for (i = 0; i < n; i++)
            a[i] = bb_mul(a[i], ninv);
    }
}

/* ---- Merkle ------------------------------------------------------------ */

/* Tree over `rows` leaves (power of two); leaf r hashes the `width` words
 * data[r + c * stride].  Layout: all levels, leaves first, 8 words per node,
 * (2 * rows - 1) nodes, root last. */
static uint32_t *merkle_build(const uint32_t *data, uint32_t rows, uint32_t width,
                              uint64_t stride)
{
    uint32_t *tree = (uint32_t *)malloc(((size_t)2 * rows - 1) * 8 * sizeof(uint32_t));
    size_t in_off = 0, out_off = rows, r;
    uint32_t count;
    if (!tree)
        return NULL;
    for (r = 0; r < rows; r++)
        p2_hash_strided(data + r, width, stride, tree + r * 8);
    for (count = rows / 2; count >= 1; count /= 2) {
        for (r = 0; r < count; r++)
            p2_compress(tree + (in_off + 2 * r) * 8, tree + (in_off + 2 * r + 1) * 8,
                        tree + (out_off + r) * 8);
        in_off = out_off;
        out_off += count;
    }
    return tree;
}

static void merkle_path(const uint32_t *tree, uint32_t log_leaves, uint32_t idx,
                        uint32_t *out)
{
    size_t off = 0, count = (size_t)1 << log_leaves;
    uint32_t l;
    for (l = 0; l < log_leaves; l++) {
        memcpy(out + 8 * l, tree + (off + (idx ^ 1u)) * 8, 8 * sizeof(uint32_t));
        off += count;
        count >>= 1;
        idx >>= 1;
    }
}

static int merkle_verify(const uint32_t *leaf, uint32_t idx, const uint32_t *path,
                         uint32_t depth, const uint32_t *root)
{
    uint32_t cur[8], nxt[8], l;
    memcpy(cur, leaf, sizeof(cur));
    for (l = 0; l < depth; l++) {
        if (idx & 1u)
            p2_compress(path + 8 * l, cur, nxt);
        else
            p2_compress(cur, path + 8 * l, nxt);
        memcpy(cur, nxt, sizeof(cur));
        idx >>= 1;
    }
    return memcmp(cur, root, sizeof(cur)) == 0;
}

/* ---- FRI helpers ------------------------------------------------------- */

/* Layer `layer` of an LDE of size 2^log_lde lives on the coset
 * g^(2^layer) * <omega_(S)>, S = 2^(log_lde - layer).  Folding pairs
 * x = shift * omega^j and -x (index j + S/2):
 * out = ((a + b) + beta * (a - b) / x) / 2. */
static uint32_t fri_fold_one(uint32_t a, uint32_t b, uint32_t beta, uint32_t x_inv)
{
    uint32_t s = bb_add(a, b);
    uint32_t d = bb_mul(bb_mul(bb_sub(a, b), beta), x_inv);
    return bb_mul(bb_add(s, d), bb_inv(2u));
}

static uint32_t layer_shift(uint32_t layer)
{
    return bb_pow(BB_GENERATOR, (uint64_t)1 << layer);
}

/* ---- reference prover -------------------------------------------------- */

int reference_prove(const prover_params_t *pp, proof_t *p, double *stage_ms)
{
    const uint32_t n = 1u << pp->log_n, W = pp->cols, Q = pp->queries;
    const uint32_t log_N = p->log_lde, N = 1u << log_N, L = p->num_layers;
    uint32_t *trace = NULL, *lde = NULL, *main_tree = NULL;
    uint32_t *codes[PROVER_MAX_FRI_LAYERS + 1] = {NULL};
    uint32_t *trees[PROVER_MAX_FRI_LAYERS] = {NULL};
    uint32_t c, i, q, alpha, betas[PROVER_MAX_FRI_LAYERS];
    transcript_t t;
    double t0 = now_ms(), t1, tstart = t0;
    int rc = -1;

    /* trace, column-major: trace[c * n + i] */
    trace = (uint32_t *)malloc((size_t)n * W * sizeof(uint32_t));
    if (!trace)
        goto out;
    for (c = 0; c < W; c++)
        for (i = 0; i < n; i++)
            trace[(size_t)c * n + i] = pr_trace_value(pp->seed, c, i);
    t1 = now_ms();
    if (stage_ms)
        stage_ms[STAGE_TRACE] += t1 - t0;
    t0 = t1;

    /* LDE: iNTT, coset shift by g, zero pad, NTT of size N */
    lde = (uint32_t *)malloc((size_t)N * W * sizeof(uint32_t));
    if (!lde)
        goto out;
    for (c = 0; c < W; c++) {
        uint32_t *col = lde + (size_t)c * N, gi = 1;
        memcpy(col, trace + (size_t)c * n, (size_t)n * sizeof(uint32_t));
        ref_ntt(col, pp->log_n, 1);
        for (i = 0; i < n; i++) {
            col[i] = bb_mul(col[i], gi);
            gi = bb_mul(gi, BB_GENERATOR);
        }
        memset(col + n, 0, (size_t)(N - n) * sizeof(uint32_t));
        ref_ntt(col, log_N, 0);
    }
    free(trace);
    trace = NULL;
    t1 = now_ms();
    if (stage_ms)
        stage_ms[STAGE_LDE] += t1 - t0;
    t0 = t1;

    /* main commitment */
    main_tree = merkle_build(lde, N, W, N);
    if (!main_tree)
        goto out;
    memcpy(p->main_root, main_tree + ((size_t)2 * N - 2) * 8, 8 * sizeof(uint32_t));
    t1 = now_ms();
    if (stage_ms)
        stage_ms[STAGE_COMMIT] += t1 - t0;
    t0 = t1;

    /* FRI */
    transcript_init(&t, pp);
    transcript_absorb(&t, p->main_root, 8);
    alpha = transcript_squeeze(&t);
    codes[0] = (uint32_t *)malloc((size_t)N * sizeof(uint32_t));
    if (!codes[0])
        goto out;
    for (i = 0; i < N; i++) {
        uint32_t acc = 0;
        for (c = W; c-- > 0;)
            acc = bb_add(bb_mul(acc, alpha), lde[(size_t)c * N + i]);
        codes[0][i] = acc;
    }
    for (i = 0; i < L; i++) {
        uint32_t S = N >> i, half = S / 2, j;
        uint32_t x_inv = bb_inv(layer_shift(i));
        uint32_t w_inv = bb_inv(bb_root_of_unity(log_N - i));
        trees[i] = merkle_build(codes[i], half, 2, half);
        codes[i + 1] = (uint32_t *)malloc((size_t)half * sizeof(uint32_t));
        if (!trees[i] || !codes[i + 1])
            goto out;
        memcpy(p->fri_roots[i], trees[i] + ((size_t)2 * half - 2) * 8, 8 * sizeof(uint32_t));
        transcript_absorb(&t, p->fri_roots[i], 8);
        betas[i] = transcript_squeeze(&t);
        for (j = 0; j < half; j++) {
            codes[i + 1][j] = fri_fold_one(codes[i][j], codes[i][j + half], betas[i], x_inv);
            x_inv = bb_mul(x_inv, w_inv);
        }
    }
    memcpy(p->final_vals, codes[L], (size_t)p->final_size * sizeof(uint32_t));
    transcript_absorb(&t, p->final_vals, p->final_size);
    t1 = now_ms();
    if (stage_ms)
        stage_ms[STAGE_FRI] += t1 - t0;
    t0 = t1;

    /* queries */
    for (q = 0; q < Q; q++) {
        uint32_t pos = transcript_squeeze(&t) & (N - 1u), idx = pos;
        uint32_t *blk = p->openings + (size_t)q * p->query_words;
        p->positions[q] = pos;
        for (c = 0; c < W; c++)
            blk[proof_row_offset(p) + c] = lde[(size_t)c * N + pos];
        merkle_path(main_tree, log_N, pos, blk + proof_main_path_offset(p));
        for (i = 0; i < L; i++) {
            uint32_t half = (N >> i) / 2, j = idx & (half - 1u);
            uint32_t *f = blk + proof_fri_offset(p, i);
            f[0] = codes[i][j];
            f[1] = codes[i][j + half];
            merkle_path(trees[i], proof_fri_depth(p, i), j, f + 2);
            idx = j;
        }
    }
    t1 = now_ms();
    if (stage_ms) {
        stage_ms[STAGE_QUERIES] += t1 - t0;
        stage_ms[STAGE_TOTAL] += t1 - tstart;
    }
    rc = 0;
out:
    free(trace);
    free(lde);
    free(main_tree);
    for (i = 0; i <= PROVER_MAX_FRI_LAYERS; i++)
        free(codes[i]);
    for (i = 0; i < PROVER_MAX_FRI_LAYERS; i++)
        free(trees[i]);
    return rc;
}

/* ---- verifier ---------------------------------------------------------- */

#define REJECT(...)                                                        \
    do {                                                                   \
        if (why && why_len)                                                \
            snprintf(why, why_len, __VA_ARGS__);                           \
        return 1;                                                          \
    } while (0)

int verify_proof(const prover_params_t *pp, const proof_t *p, char *why, size_t why_len)
{
    uint32_t betas[PROVER_MAX_FRI_LAYERS], fin[PR_FRI_FINAL_MAX];
    uint32_t alpha, i, q, c, N, L, F;
    transcript_t t;

    if (params_check(pp))
        REJECT("bad parameters (%s)", params_check(pp));
    if (p->log_lde != pp->log_n + PR_LOG_BLOWUP || p->cols != pp->cols ||
        p->queries != pp->queries || !p->positions || !p->openings)
        REJECT("proof shape does not match the parameters");
    N = 1u << p->log_lde;
    L = p->num_layers;
    F = p->final_size;
    if (L != (p->log_lde > PR_FRI_LOG_FINAL ? p->log_lde - PR_FRI_LOG_FINAL : 0u) ||
        F != N >> L || p->query_words != proof_fri_offset(p, L))
        REJECT("proof shape does not match the parameters");

    /* replay the transcript */
    transcript_init(&t, pp);
    transcript_absorb(&t, p->main_root, 8);
    alpha = transcript_squeeze(&t);
    for (i = 0; i < L; i++) {
        transcript_absorb(&t, p->fri_roots[i], 8);
        betas[i] = transcript_squeeze(&t);
    }
    transcript_absorb(&t, p->final_vals, F);
    for (q = 0; q < p->queries; q++)
        if (p->positions[q] != (transcript_squeeze(&t) & (N - 1u)))
            REJECT("query %u: position does not match the transcript", q);

    /* final layer: degree < F / 4 (its coefficients on the coset are
     * scaled by powers of the shift, which keeps zeros zero) */
    memcpy(fin, p->final_vals, F * sizeof(uint32_t));
    ref_ntt(fin, p->log_lde - L, 1);
    for (i = F / 4; i < F; i++)
        if (fin[i])
            REJECT("final layer is not of degree < %u", F / 4);

    for (q = 0; q < p->queries; q++) {
        const uint32_t *blk = p->openings + (size_t)q * p->query_words;
        const uint32_t *row = blk + proof_row_offset(p);
        uint32_t leaf[8], val = 0, idx = p->positions[q];

        p2_hash(row, p->cols, leaf);
        if (!merkle_verify(leaf, idx, blk + proof_main_path_offset(p), p->log_lde,
                           p->main_root))
            REJECT("query %u: main trace opening fails its Merkle path", q);
        for (c = p->cols; c-- > 0;)
            val = bb_add(bb_mul(val, alpha), row[c]);

        for (i = 0; i < L; i++) {
            uint32_t log_S = p->log_lde - i, half = 1u << (log_S - 1);
            uint32_t j = idx & (half - 1u), pair[2], x_inv;
            const uint32_t *f = blk + proof_fri_offset(p, i);
            pair[0] = f[0];
            pair[1] = f[1];
            if ((idx < half ? pair[0] : pair[1]) != val)
                REJECT("query %u: FRI layer %u value inconsistent with the previous layer",
                       q, i);
            p2_hash(pair, 2, leaf);
            if (!merkle_verify(leaf, j, f + 2, proof_fri_depth(p, i), p->fri_roots[i]))
                REJECT("query %u: FRI layer %u opening fails its Merkle path", q, i);
            x_inv = bb_mul(bb_inv(layer_shift(i)), bb_pow(bb_inv(bb_root_of_unity(log_S)), j));
            val = fri_fold_one(pair[0], pair[1], betas[i], x_inv);
            idx = j;
        }
        if (p->final_vals[idx] != val)
            REJECT("query %u: last fold does not match the final layer", q);
    }
    return 0;
}
