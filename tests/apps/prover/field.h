/* field.h - BabyBear prime field arithmetic, p = 2^31 - 2^27 + 1 = 0x78000001.
 *
 * Owns: canonical-form add/sub/neg/mul (64-bit product, reduction by %),
 * pow, inverse (Fermat), two-adic roots of unity.  Elements are uint32_t in
 * [0, p).  31 generates the multiplicative group; p - 1 = 15 * 2^27, so the
 * two-adicity is 27.  Usable from C11 (static inline) and CUDA
 * (__host__ __device__). */
#ifndef PROVER_FIELD_H
#define PROVER_FIELD_H

#include <stdint.h>

#ifdef __CUDACC__
#define FIELD_FN static __host__ __device__ inline
#else
#define FIELD_FN static inline
#endif

#define BB_P 0x78000001u
#define BB_GENERATOR 31u
#define BB_TWO_ADICITY 27u
#define BB_ODD_FACTOR 15u /* p - 1 = BB_ODD_FACTOR << BB_TWO_ADICITY */

FIELD_FN uint32_t bb_add(uint32_t a, uint32_t b)
{
    uint32_t s = a + b; /* a, b < 2^31: no overflow */
    return s >= BB_P ? s - BB_P : s;
}

FIELD_FN uint32_t bb_sub(uint32_t a, uint32_t b)
{
    return a >= b ? a - b : a + BB_P - b;
}

FIELD_FN uint32_t bb_neg(uint32_t a)
{
    return a ? BB_P - a : 0u;
}

FIELD_FN uint32_t bb_mul(uint32_t a, uint32_t b)
{
    return (uint32_t)(((uint64_t)a * b) % BB_P);
}

/* Reduce an arbitrary 64-bit integer into the field. */
FIELD_FN uint32_t bb_from_u64(uint64_t x)
{
    return (uint32_t)(x % BB_P);
}

FIELD_FN uint32_t bb_pow(uint32_t a, uint64_t e)
{
    uint32_t r = 1u;
    while (e) {
        if (e & 1u)
            r = bb_mul(r, a);
        a = bb_mul(a, a);
        e >>= 1;
    }
    return r;
}

/* a^(p-2); bb_inv(0) == 0. */
FIELD_FN uint32_t bb_inv(uint32_t a)
{
    return bb_pow(a, BB_P - 2u);
}

/* Primitive 2^log_n-th root of unity, 0 <= log_n <= 27:
 * 31^(15 * 2^(27 - log_n)). */
FIELD_FN uint32_t bb_root_of_unity(uint32_t log_n)
{
    return bb_pow(BB_GENERATOR, (uint64_t)BB_ODD_FACTOR << (BB_TWO_ADICITY - log_n));
}

#endif /* PROVER_FIELD_H */
