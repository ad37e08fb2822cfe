/* protocol.h - protocol constants and the trace definition, shared by the CPU
 * reference (C11) and the GPU prover (CUDA).
 *
 * Owns: blowup / FRI shape constants, the splitmix64 mixer, and the trace:
 * column c is the affine recurrence x_{i+1} = a_c * x_i + b_c, x_0 = s_c
 * (a_c in [2, p-1]; a_c, b_c, s_c drawn from splitmix64 of the statement
 * seed), evaluated per row through its closed form
 * x_i = a^i * s + b * (a^i - 1) / (a - 1), so every row is independent. */
#ifndef PROVER_PROTOCOL_H
#define PROVER_PROTOCOL_H

#include <stdint.h>
#include "field.h"

#define PR_LOG_BLOWUP 2      /* LDE blowup 4 */
#define PR_FRI_LOG_FINAL 6   /* FRI stops at 64 elements */
#define PR_FRI_FINAL_MAX (1u << PR_FRI_LOG_FINAL)
#define PR_SPLITMIX_GAMMA 0x9E3779B97F4A7C15ull

/* Output k (k >= 0) of a splitmix64 generator seeded with seed. */
FIELD_FN uint64_t pr_mix64(uint64_t seed, uint64_t k)
{
    uint64_t z = seed + (k + 1u) * PR_SPLITMIX_GAMMA;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Recurrence coefficients of column c. */
FIELD_FN void pr_trace_coeffs(uint64_t seed, uint32_t c, uint32_t *a, uint32_t *b,
                              uint32_t *s)
{
    *a = 2u + (uint32_t)(pr_mix64(seed, 3u * (uint64_t)c) % (BB_P - 2u));
    *b = bb_from_u64(pr_mix64(seed, 3u * (uint64_t)c + 1u));
    *s = bb_from_u64(pr_mix64(seed, 3u * (uint64_t)c + 2u));
}

/* Trace value at column c, row i. */
FIELD_FN uint32_t pr_trace_value(uint64_t seed, uint32_t c, uint32_t i)
{
    uint32_t a, b, s, ai;
    pr_trace_coeffs(seed, c, &a, &b, &s);
    ai = bb_pow(a, i);
    return bb_add(bb_mul(ai, s),
                  bb_mul(bb_mul(b, bb_sub(ai, 1u)), bb_inv(bb_sub(a, 1u))));
}

#endif /* PROVER_PROTOCOL_H */
