/* prover.h - host-side API of the STARK-style sample prover: parameters,
 * proof layout, Fiat-Shamir transcript, CPU reference prover, CPU verifier,
 * proof digest and stage timing.  Implemented in reference.c (pure C11, no
 * CUDA); prover.cu uses it for everything that runs on the host.
 *
 * Proof of one statement (N = 2^(log_n + 2) LDE rows, L committed FRI layers,
 * layer i has S_i = N >> i elements, committed as S_i / 2 leaves, leaf j =
 * hash(v[j], v[j + S_i/2]); F = N >> L <= 64 final elements):
 *   main_root[8], fri_roots[L][8], final_vals[F],
 *   per query q: position (in [0, N)), row[W] (LDE row at position),
 *     main auth path (log2 N sibling digests, leaf level first),
 *     per layer i: (v[j], v[j + S_i/2]) with j = position mod (S_i/2),
 *     then log2(S_i) - 1 sibling digests. */
#ifndef PROVER_PROVER_H
#define PROVER_PROVER_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PROVER_MIN_LOG_N 1
#define PROVER_MAX_LOG_N 24
#define PROVER_MAX_COLS 64
#define PROVER_MAX_QUERIES 1024
#define PROVER_MAX_PROOFS 1000000
#define PROVER_MAX_FRI_LAYERS 28
#define PROVER_DIGEST_INIT 0xcbf29ce484222325ull /* FNV-1a 64 offset basis */

typedef struct {
    uint32_t log_n;   /* trace rows = 2^log_n */
    uint32_t cols;    /* trace columns W */
    uint32_t queries; /* FRI queries Q */
    uint64_t seed;    /* statement seed */
} prover_params_t;

typedef struct {
    uint32_t log_lde;    /* log2 N */
    uint32_t cols;       /* W */
    uint32_t queries;    /* Q */
    uint32_t num_layers; /* L */
    uint32_t final_size; /* F */
    uint32_t query_words;    /* words of one query's opening */
    uint32_t main_root[8];
    uint32_t fri_roots[PROVER_MAX_FRI_LAYERS][8];
    uint32_t final_vals[64];
    uint32_t *positions; /* [Q] */
    uint32_t *openings;  /* [Q][query_words]: row, main path, FRI layers */
} proof_t;

/* Offsets (in words) inside one query's opening block. */
size_t proof_row_offset(const proof_t *p);
size_t proof_main_path_offset(const proof_t *p);
size_t proof_fri_offset(const proof_t *p, uint32_t layer); /* the 2 values */
uint32_t proof_fri_depth(const proof_t *p, uint32_t layer); /* path length */

/* Returns NULL if the parameters are in range, else the offending option name. */
const char *params_check(const prover_params_t *pp);
/* Sizes the proof for pp and allocates it; 0 on success. */
int proof_alloc(proof_t *p, const prover_params_t *pp);
void proof_free(proof_t *p);

/* Fiat-Shamir transcript: a Poseidon2 duplex sponge (see reference.c). */
typedef struct {
    uint32_t s[16];
} transcript_t;
void transcript_init(transcript_t *t, const prover_params_t *pp);
void transcript_absorb(transcript_t *t, const uint32_t *v, uint32_t n);
uint32_t transcript_squeeze(transcript_t *t);

/* In-place natural-order NTT of size 2^log_n (inverse includes 1/n). */
void ref_ntt(uint32_t *a, uint32_t log_n, int inverse);

enum { STAGE_TRACE, STAGE_LDE, STAGE_COMMIT, STAGE_FRI, STAGE_QUERIES, STAGE_TOTAL,
       STAGE_COUNT };
extern const char *const stage_names[STAGE_COUNT];
double now_ms(void); /* monotonic wall clock */

/* CPU reference prover; adds per-stage ms to stage_ms (may be NULL).
 * p must come from proof_alloc(p, pp).  0 on success, -1 on OOM. */
int reference_prove(const prover_params_t *pp, proof_t *p, double *stage_ms);

/* CPU verifier: 0 = accept; otherwise writes the reason into why. */
int verify_proof(const prover_params_t *pp, const proof_t *p, char *why, size_t why_len);

/* FNV-1a 64 over the little-endian bytes of the proof's words, in order:
 * main_root, fri_roots, final_vals, then per query its position and opening
 * block.  Chain it over proofs starting from PROVER_DIGEST_INIT. */
uint64_t proof_digest(uint64_t h, const proof_t *p);

#ifdef __cplusplus
}
#endif

#endif /* PROVER_PROVER_H */
