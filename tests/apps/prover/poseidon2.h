/* poseidon2.h - Poseidon2-style permutation over BabyBear, sponge and 2-to-1
 * compression; shared by host C and CUDA.
 *
 * Owns: the permutation (width 16, S-box x^7, 4 + 4 external rounds, 13
 * internal rounds), the sponge hash (rate 8, capacity 8, 8-element digest)
 * and the Merkle compression.  Parameters follow the shape of the Poseidon2
 * paper but are NOT audited: this is a benchmark workload, not a secure hash.
 *
 *  - external linear layer: circ(2*M4, M4, M4, M4), i.e. M4 on each 4-lane
 *    chunk, then every lane adds the sum of its column over the 4 chunks;
 *    M4 = [[5,7,1,3],[4,6,1,1],[1,3,5,7],[1,1,4,6]]; also applied once
 *    before the first round.
 *  - internal linear layer: s[i] = s[i] * D[i] + sum(s), D = (-2, 2, 3, ..., 16).
 *  - round constants: constant k (k = 0..127 external, round-major; 128..140
 *    internal) is splitmix64 output k from seed P2_RC_SEED reduced mod p,
 *    i.e. mix64(P2_RC_SEED + (k + 1) * 0x9E3779B97F4A7C15) % p (see
 *    protocol.h's pr_mix64; test_reference.c recomputes and checks the table).
 *  - sponge: state = 0, state[8] = input length; for each chunk of 8 inputs
 *    (last one zero padded) overwrite state[0..8) and permute (permute once
 *    for an empty input); digest = state[0..8).
 *  - compression: state = left || right, permute, out[i] = state[i] + left[i].
 */
#ifndef PROVER_POSEIDON2_H
#define PROVER_POSEIDON2_H

#include <stdint.h>
#include "field.h"

#define P2_WIDTH 16
#define P2_RATE 8
#define P2_DIGEST 8
#define P2_ROUNDS_F 8  /* external rounds: 4 at the start, 4 at the end */
#define P2_ROUNDS_P 13 /* internal (partial) rounds */
#define P2_RC_SEED 0x506F736569646F32ull

#define P2_RC_EXT_INIT { \
    0x5c57ffb0u, 0x051c1ae4u, 0x3515665cu, 0x564131a6u, \
    0x2950b02fu, 0x3d6e948bu, 0x0da1c1b8u, 0x3716ebadu, \
    0x54e12902u, 0x4cd20137u, 0x4116e492u, 0x57c9fe13u, \
    0x4c6952e1u, 0x1b3001cau, 0x4a735e76u, 0x34017c57u, \
    0x3d313d85u, 0x591e56aeu, 0x42cc88afu, 0x09a69851u, \
    0x216a7037u, 0x54a71fb7u, 0x0769101cu, 0x6019356du, \
    0x64e53ca4u, 0x3ba6cc62u, 0x22198fa4u, 0x0364284bu, \
    0x4b76090fu, 0x23a009afu, 0x46e5e6a2u, 0x1ed49c03u, \
    0x0faff4dcu, 0x646d881eu, 0x22d9e5f3u, 0x4dfdc8afu, \
    0x5e52910fu, 0x40de3973u, 0x5c16dfd4u, 0x6336043fu, \
    0x24a916e2u, 0x400ed93au, 0x66ea86beu, 0x4d7aa54cu, \
    0x28a1f411u, 0x221fc866u, 0x50ca2764u, 0x0f0d0d5fu, \
    0x48d489f1u, 0x43b746d8u, 0x2471c374u, 0x157470c0u, \
    0x5abc5334u, 0x673d66b2u, 0x2223d742u, 0x502869dbu, \
    0x20b3041au, 0x1e234489u, 0x66070a65u, 0x29c69463u, \
    0x05249518u, 0x285a1910u, 0x5a0c7d1du, 0x65ac8f41u, \
    0x59630857u, 0x002c101au, 0x1f71cd66u, 0x4e03ce09u, \
    0x540a16acu, 0x0fc2bb34u, 0x3914c918u, 0x325c020du, \
    0x29fb9474u, 0x06b46c9fu, 0x2452ec25u, 0x15c01f9eu, \
    0x63db26dfu, 0x49f1a0beu, 0x1f29a15eu, 0x7661d00au, \
    0x06b846a8u, 0x2290af9eu, 0x68aa2a5fu, 0x60511dbdu, \
    0x6fc9fd94u, 0x070c8316u, 0x73b9a207u, 0x326030bdu, \
    0x76d24cc7u, 0x0df5fb78u, 0x5b3e9c70u, 0x49040340u, \
    0x3056c22du, 0x67d8c0d0u, 0x20ea4577u, 0x3350f1bfu, \
    0x676cc12du, 0x5698d07eu, 0x774cad8cu, 0x0c8365abu, \
    0x09257c19u, 0x061c2c24u, 0x240c1d01u, 0x177eb802u, \
    0x06fffeb4u, 0x0a93eda5u, 0x46fe60c6u, 0x6c01ce3eu, \
    0x27d1e9abu, 0x1741707cu, 0x68a16f65u, 0x3506982fu, \
    0x2cf4165au, 0x09a1395bu, 0x10b3b746u, 0x44eb5826u, \
    0x6dc5538fu, 0x43d5713du, 0x225f7993u, 0x3bd9ce2du, \
    0x26a18dffu, 0x657443c9u, 0x2d35cb22u, 0x261b890bu, \
    0x1e3a20e9u, 0x26c11a11u, 0x68ef5ca5u, 0x0ed21816u \
}
#define P2_RC_INT_INIT { \
    0x173a7f4cu, 0x4153865fu, 0x2296fa73u, 0x0900fd2au, \
    0x60cea3d9u, 0x110b47ffu, 0x03746d38u, 0x52d0bedau, \
    0x1a70cf85u, 0x61670b33u, 0x1a69e999u, 0x49e4566du, \
    0x5b811f12u \
}

static const uint32_t p2_rc_ext_host[P2_ROUNDS_F * P2_WIDTH] = P2_RC_EXT_INIT;
static const uint32_t p2_rc_int_host[P2_ROUNDS_P] = P2_RC_INT_INIT;
#ifdef __CUDACC__
static __constant__ uint32_t p2_rc_ext_dev[P2_ROUNDS_F * P2_WIDTH] = P2_RC_EXT_INIT;
static __constant__ uint32_t p2_rc_int_dev[P2_ROUNDS_P] = P2_RC_INT_INIT;
#endif

#ifdef __CUDA_ARCH__
#define P2_RC_EXT p2_rc_ext_dev
#define P2_RC_INT p2_rc_int_dev
#else
#define P2_RC_EXT p2_rc_ext_host
#define P2_RC_INT p2_rc_int_host
#endif

FIELD_FN uint32_t p2_sbox(uint32_t x)
{
    uint32_t x2 = bb_mul(x, x);
    uint32_t x3 = bb_mul(x2, x);
    uint32_t x4 = bb_mul(x2, x2);
    return bb_mul(x4, x3);
}

/* y = M4 x, addition chain from the Poseidon2 paper. */
FIELD_FN void p2_m4(uint32_t *x)
{
    uint32_t t0 = bb_add(x[0], x[1]);
    uint32_t t1 = bb_add(x[2], x[3]);
    uint32_t t2 = bb_add(bb_add(x[1], x[1]), t1);
    uint32_t t3 = bb_add(bb_add(x[3], x[3]), t0);
    uint32_t t1x4 = bb_add(bb_add(t1, t1), bb_add(t1, t1));
    uint32_t t0x4 = bb_add(bb_add(t0, t0), bb_add(t0, t0));
    uint32_t t4 = bb_add(t1x4, t3);
    uint32_t t5 = bb_add(t0x4, t2);
    x[0] = bb_add(t3, t5);
    x[1] = t5;
    x[2] = bb_add(t2, t4);
    x[3] = t4;
}

FIELD_FN void p2_external_linear(uint32_t *s)
{
    int c, r;
    for (c = 0; c < 4; c++)
        p2_m4(s + 4 * c);
    for (r = 0; r < 4; r++) {
        uint32_t t = bb_add(bb_add(s[r], s[4 + r]), bb_add(s[8 + r], s[12 + r]));
        for (c = 0; c < 4; c++)
            s[4 * c + r] = bb_add(s[4 * c + r], t);
    }
}

/* Diagonal of the internal matrix (J + diag(D)). */
FIELD_FN uint32_t p2_internal_diag(int i)
{
    return i == 0 ? BB_P - 2u : (uint32_t)i + 1u;
}

FIELD_FN void p2_internal_linear(uint32_t *s)
{
    uint32_t sum = 0;
    int i;
    for (i = 0; i < P2_WIDTH; i++)
        sum = bb_add(sum, s[i]);
    for (i = 0; i < P2_WIDTH; i++)
        s[i] = bb_add(bb_mul(s[i], p2_internal_diag(i)), sum);
}

FIELD_FN void p2_external_round(uint32_t *s, int round)
{
    int i;
    for (i = 0; i < P2_WIDTH; i++)
        s[i] = p2_sbox(bb_add(s[i], P2_RC_EXT[round * P2_WIDTH + i]));
    p2_external_linear(s);
}

FIELD_FN void p2_permute(uint32_t *s)
{
    int r;
    p2_external_linear(s);
    for (r = 0; r < P2_ROUNDS_F / 2; r++)
        p2_external_round(s, r);
    for (r = 0; r < P2_ROUNDS_P; r++) {
        s[0] = p2_sbox(bb_add(s[0], P2_RC_INT[r]));
        p2_internal_linear(s);
    }
    for (r = P2_ROUNDS_F / 2; r < P2_ROUNDS_F; r++)
        p2_external_round(s, r);
}

/* Sponge hash of len elements data[0], data[stride], ..., data[(len-1)*stride]. */
FIELD_FN void p2_hash_strided(const uint32_t *data, uint32_t len, uint64_t stride,
                              uint32_t *out)
{
    uint32_t s[P2_WIDTH];
    uint32_t start, i;
    for (i = 0; i < P2_WIDTH; i++)
        s[i] = 0;
    s[P2_RATE] = len;
    start = 0;
    do {
        for (i = 0; i < P2_RATE; i++)
            s[i] = start + i < len ? data[(uint64_t)(start + i) * stride] : 0u;
        p2_permute(s);
        start += P2_RATE;
    } while (start < len);
    for (i = 0; i < P2_DIGEST; i++)
        out[i] = s[i];
}

FIELD_FN void p2_hash(const uint32_t *data, uint32_t len, uint32_t *out)
{
    p2_hash_strided(data, len, 1, out);
}

/* 2-to-1 compression of two digests (out may alias neither input). */
FIELD_FN void p2_compress(const uint32_t *left, const uint32_t *right, uint32_t *out)
{
    uint32_t s[P2_WIDTH];
    int i;
    for (i = 0; i < P2_DIGEST; i++) {
        s[i] = left[i];
        s[P2_DIGEST + i] = right[i];
    }
    p2_permute(s);
    for (i = 0; i < P2_DIGEST; i++)
        out[i] = bb_add(s[i], left[i]);
}

#endif /* PROVER_POSEIDON2_H */
