/* test_reference.c - CPU-only self test of the sample prover (no CUDA).
 *
 * Owns: checks of the field (against independent shift-and-add modular
 * arithmetic), the Poseidon2 constants and linear layers, the trace
 * recurrence, the NTT (against a naive O(n^2) DFT), and the reference
 * prover + verifier: honest proofs are accepted and deterministic, and
 * tampered openings / roots / FRI values / final values / paths /
 * positions are rejected.
 * Build: gcc -std=c11 -O2 -o test_reference test_reference.c reference.c
 * Run:   ./test_reference [seed]   (seed printed for reproducibility)
 * Exit 0 on success, 1 on failure. */
#define _POSIX_C_SOURCE 199309L
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "prover.h"
#include "field.h"
#include "poseidon2.h"
#include "protocol.h"

static int failures;
static uint64_t rng_state;

#define CHECK(cond, ...)                                                   \
    do {                                                                   \
        if (!(cond)) {                                                     \
            failures++;                                                    \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);           \
            fprintf(stderr, __VA_ARGS__);                                  \
            fputc('\n', stderr);                                           \
        }                                                                  \
    } while (0)

static uint64_t rng(void)
{
    rng_state += PR_SPLITMIX_GAMMA;
    return pr_mix64(rng_state, 0);
}

static uint32_t rng_below(uint32_t n)
{
    return (uint32_t)(rng() % n);
}

/* Independent modular arithmetic: no 64-bit product, shift-and-add. */
static uint32_t slow_mul(uint32_t a, uint32_t b)
{
    uint64_t r = 0, x = a;
    while (b) {
        if (b & 1u)
            r = (r + x) % BB_P;
        x = (x * 2u) % BB_P;
        b >>= 1;
    }
    return (uint32_t)r;
}

static void test_field(void)
{
    int k;
    uint32_t g = BB_GENERATOR;
    for (k = 0; k < 200000; k++) {
        uint32_t a = rng_below(BB_P), b = rng_below(BB_P);
        if (k < 4) /* edge values */
            a = k < 2 ? (uint32_t)k : BB_P - 1u, b = k & 1 ? BB_P - 1u : a;
        CHECK(bb_add(a, b) == (uint32_t)(((uint64_t)a + b) % BB_P), "add %u %u", a, b);
        CHECK(bb_sub(a, b) == (uint32_t)(((uint64_t)a + BB_P - b) % BB_P), "sub %u %u", a, b);
        CHECK(bb_mul(a, b) == slow_mul(a, b), "mul %u %u", a, b);
        if (a && k < 20000)
            CHECK(slow_mul(a, bb_inv(a)) == 1u, "inv %u", a);
    }
    CHECK(bb_inv(2u) == (BB_P + 1u) / 2u, "inv(2)");
    /* 31 generates F_p^*: p - 1 = 2^27 * 3 * 5 */
    CHECK(bb_pow(g, BB_P - 1u) == 1u && bb_pow(g, (BB_P - 1u) / 2u) != 1u &&
              bb_pow(g, (BB_P - 1u) / 3u) != 1u && bb_pow(g, (BB_P - 1u) / 5u) != 1u,
          "31 is not a generator");
    for (k = 1; k <= (int)BB_TWO_ADICITY; k++) {
        uint32_t w = bb_root_of_unity((uint32_t)k);
        CHECK(bb_pow(w, 1ull << k) == 1u && bb_pow(w, 1ull << (k - 1)) == BB_P - 1u,
              "root of unity of order 2^%d", k);
    }
    printf("ok   field: add/sub/mul/inv vs independent arithmetic, generator, 2-adic roots\n");
}

static void test_poseidon2(void)
{
    static const uint32_t m4[4][4] = {{5, 7, 1, 3}, {4, 6, 1, 1}, {1, 3, 5, 7}, {1, 1, 4, 6}};
    uint32_t x[4], y[4], s[16], s2[16], sum = 1, r, c, k;
    for (k = 0; k < P2_ROUNDS_F * P2_WIDTH + P2_ROUNDS_P; k++) {
        uint32_t want = bb_from_u64(pr_mix64(P2_RC_SEED, k));
        uint32_t got = k < P2_ROUNDS_F * P2_WIDTH ? p2_rc_ext_host[k]
                                                   : p2_rc_int_host[k - P2_ROUNDS_F * P2_WIDTH];
        CHECK(got == want, "round constant %u", k);
    }
    for (k = 0; k < 1000; k++) {
        for (c = 0; c < 4; c++)
            x[c] = y[c] = rng_below(BB_P);
        p2_m4(y);
        for (r = 0; r < 4; r++) {
            uint32_t acc = 0;
            for (c = 0; c < 4; c++)
                acc = bb_add(acc, bb_mul(m4[r][c], x[c]));
            CHECK(acc == y[r], "M4 row %u", r);
        }
    }
    for (k = 0; k < P2_WIDTH; k++)
        sum = bb_add(sum, bb_inv(p2_internal_diag((int)k)));
    CHECK(sum != 0, "internal matrix singular");
    /* permutation is deterministic and diffuses a one-element change */
    for (k = 0; k < 16; k++)
        s[k] = s2[k] = k;
    s2[15] = 16;
    p2_permute(s);
    p2_permute(s2);
    for (k = 0; k < 16; k++)
        CHECK(s[k] != s2[k], "no diffusion in lane %u", k);
    printf("ok   poseidon2: round constants = splitmix64(seed), M4 chain = matrix, "
           "internal layer invertible, diffusion\n");
}

static void test_trace(void)
{
    uint64_t seed = rng();
    uint32_t c, i, a, b, s;
    for (c = 0; c < 8; c++) {
        pr_trace_coeffs(seed, c, &a, &b, &s);
        CHECK(pr_trace_value(seed, c, 0) == s, "trace row 0");
        for (i = 0; i < 64; i++)
            CHECK(pr_trace_value(seed, c, i + 1) ==
                      bb_add(bb_mul(a, pr_trace_value(seed, c, i)), b),
                  "trace recurrence col %u row %u", c, i);
    }
    printf("ok   trace: closed form satisfies x_{i+1} = a x_i + b\n");
}

static void test_ntt(void)
{
    uint32_t log_n;
    for (log_n = 0; log_n <= 8; log_n++) {
        uint32_t n = 1u << log_n, i, j;
        uint32_t *x = (uint32_t *)malloc(n * sizeof(uint32_t));
        uint32_t *y = (uint32_t *)malloc(n * sizeof(uint32_t));
        uint32_t w = bb_root_of_unity(log_n);
        for (i = 0; i < n; i++)
            x[i] = y[i] = rng_below(BB_P);
        ref_ntt(y, log_n, 0);
        for (j = 0; j < n; j++) {
            uint32_t acc = 0;
            for (i = 0; i < n; i++)
                acc = bb_add(acc, slow_mul(x[i], bb_pow(w, (uint64_t)i * j)));
            CHECK(y[j] == acc, "NTT size %u index %u", n, j);
        }
        ref_ntt(y, log_n, 1);
        for (i = 0; i < n; i++)
            CHECK(y[i] == x[i], "iNTT(NTT(x)) size %u index %u", n, i);
        free(x);
        free(y);
    }
    printf("ok   ntt: matches naive DFT and round-trips for n = 1..256\n");
}

static int verifies(const prover_params_t *pp, const proof_t *p, char *why)
{
    return verify_proof(pp, p, why, 160) == 0;
}

static void bump(uint32_t *w)
{
    *w = bb_add(*w, 1u);
}

static void test_prover(void)
{
    int cfg, tampers = 0, proofs_done = 0;
    char why[160];
    for (cfg = 0; cfg < 40; cfg++) {
        prover_params_t pp;
        uint32_t k, K = 1u + rng_below(3);
        uint64_t base = rng();
        uint64_t d1 = PROVER_DIGEST_INIT, d2 = PROVER_DIGEST_INIT;
        pp.log_n = cfg < 4 ? 1u + (uint32_t)cfg : 4u + rng_below(5); /* 1..4, then 4..8 */
        pp.cols = 1u + rng_below(8);
        pp.queries = 1u + rng_below(16);
        for (k = 0; k < K; k++) {
            proof_t p, p2;
            uint32_t q, L, *blk;
            pp.seed = base + k;
            if (proof_alloc(&p, &pp) || proof_alloc(&p2, &pp) ||
                reference_prove(&pp, &p, NULL) || reference_prove(&pp, &p2, NULL)) {
                CHECK(0, "allocation failed");
                return;
            }
            proofs_done++;
            d1 = proof_digest(d1, &p);
            d2 = proof_digest(d2, &p2);
            CHECK(verifies(&pp, &p, why), "honest proof rejected (log-n %u cols %u queries %u "
                  "seed %" PRIu64 "): %s", pp.log_n, pp.cols, pp.queries, pp.seed, why);

            q = rng_below(pp.queries);
            blk = p2.openings + (size_t)q * p2.query_words;
            L = p2.num_layers;
#define TAMPER(what, word)                                                           \
    do {                                                                             \
        uint32_t *w_ = &(word), saved_ = *w_; /* index evaluated once */             \
        bump(w_);                                                                    \
        CHECK(!verifies(&pp, &p2, why), "tampered %s accepted (log-n %u cols %u "    \
              "seed %" PRIu64 ")", what, pp.log_n, pp.cols, pp.seed);                \
        *w_ = saved_;                                                                \
        tampers++;                                                                   \
    } while (0)
            TAMPER("opened row value", blk[proof_row_offset(&p2) + rng_below(pp.cols)]);
            TAMPER("main root", p2.main_root[rng_below(8)]);
            TAMPER("main path", blk[proof_main_path_offset(&p2) + rng_below(p2.log_lde * 8)]);
            TAMPER("final value", p2.final_vals[rng_below(p2.final_size)]);
            p2.positions[q] ^= 1u;
            CHECK(!verifies(&pp, &p2, why), "tampered position accepted");
            p2.positions[q] ^= 1u;
            tampers++;
            if (L) {
                uint32_t i = rng_below(L);
                uint32_t *f = blk + proof_fri_offset(&p2, i);
                TAMPER("FRI root", p2.fri_roots[i][rng_below(8)]);
                TAMPER("FRI value", f[0]);
                TAMPER("FRI sibling value", f[1]);
                TAMPER("FRI path", f[2 + rng_below(proof_fri_depth(&p2, i) * 8)]);
            }
#undef TAMPER
            CHECK(verifies(&pp, &p2, why), "restored proof rejected: %s", why);
            proof_free(&p);
            proof_free(&p2);
        }
        CHECK(d1 == d2, "prover not deterministic");
    }
    printf("ok   prover: %d honest proofs accepted and deterministic, %d tampered proofs "
           "rejected\n", proofs_done, tampers);
}

int main(int argc, char **argv)
{
    uint64_t seed;
    if (argc > 1) {
        seed = strtoull(argv[1], NULL, 0);
    } else {
        FILE *f = fopen("/dev/urandom", "rb");
        if (!f || fread(&seed, sizeof(seed), 1, f) != 1)
            seed = (uint64_t)time(NULL);
        if (f)
            fclose(f);
    }
    printf("test_reference: seed 0x%016" PRIx64 " (rerun: ./test_reference 0x%016" PRIx64 ")\n",
           seed, seed);
    rng_state = seed;
    test_field();
    test_poseidon2();
    test_trace();
    test_ntt();
    test_prover();
    if (failures) {
        printf("FAILED: %d check(s)\n", failures);
        return 1;
    }
    printf("PASS\n");
    return 0;
}
