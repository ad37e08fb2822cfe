/* kernels.cuh - the prover's CUDA kernels, included by prover.cu.
 *
 * Owns: every __global__ kernel of the sample prover (naive first GPU port:
 * 1-D, bounds-checked, one thread per output element, twiddles recomputed by
 * bb_pow in every thread).  Kept in a header of its own so that
 * kernels/verify.cu can compile these exact originals next to libgpuaccel's
 * replacement kernels and compare them bit for bit.  Names, parameter lists
 * and behavior are part of that contract: the replacement table
 * (kernels/table.txt) is keyed by the mangled names.  Do not "fix" them here.
 * Must never: depend on anything host-side (prover.h, cudart calls). */
#ifndef PROVER_KERNELS_CUH
#define PROVER_KERNELS_CUH

#include <stdint.h>

#include "field.h"
#include "poseidon2.h"
#include "protocol.h"

/* ---- kernels (1-D, BLOCK threads, one thread per output element) ---------- */

/* trace[c * n + i] = row i of column c; n * cols threads. */
__global__ void trace_kernel(uint32_t *trace, uint32_t n, uint32_t cols, uint32_t seed_lo,
                             uint32_t seed_hi)
{
    uint32_t t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= n * cols)
        return;
    uint64_t seed = ((uint64_t)seed_hi << 32) | seed_lo;
    trace[t] = pr_trace_value(seed, t / n, t % n);
}

/* In-place bit-reversal permutation of n = 2^log_n elements; n threads. */
__global__ void bit_reverse(uint32_t *data, uint32_t n, uint32_t log_n)
{
    uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    uint32_t j = __brev(i) >> (32u - log_n);
    if (i < j) {
        uint32_t t = data[i];
        data[i] = data[j];
        data[j] = t;
    }
}

/* One radix-2 DIT butterfly layer; root is a primitive (2*half)-th root of
 * unity (inverse root for the inverse NTT); n/2 threads. */
__global__ void ntt_layer(uint32_t *data, uint32_t n, uint32_t half, uint32_t root)
{
    uint32_t t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= n / 2)
        return;
    uint32_t k = t % half;
    uint32_t i = (t / half) * 2u * half + k;
    uint32_t w = bb_pow(root, k);
    uint32_t u = data[i], v = bb_mul(data[i + half], w);
    data[i] = bb_add(u, v);
    data[i + half] = bb_sub(u, v);
}

/* data[i] *= factor (1/n after an inverse NTT); n threads. */
__global__ void scale(uint32_t *data, uint32_t n, uint32_t factor)
{
    uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    data[i] = bb_mul(data[i], factor);
}

/* Coefficient i *= shift^i (move evaluation to the coset shift*<w>); n threads. */
__global__ void coset_shift(uint32_t *data, uint32_t n, uint32_t shift)
{
    uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    data[i] = bb_mul(data[i], bb_pow(shift, i));
}

/* digests[r] = sponge(data[r + c * stride], c < width); rows threads. */
__global__ void hash_leaves(const uint32_t *data, uint32_t *digests, uint32_t rows,
                            uint32_t width, uint32_t stride)
{
    uint32_t r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows)
        return;
    p2_hash_strided(data + r, width, stride, digests + (size_t)r * 8);
}

/* parents[i] = compress(children[2i], children[2i+1]); count threads. */
__global__ void hash_nodes(const uint32_t *children, uint32_t *parents, uint32_t count)
{
    uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= count)
        return;
    p2_compress(children + (size_t)i * 16, children + (size_t)i * 16 + 8,
                parents + (size_t)i * 8);
}

/* out[k] = sum_c alpha^c * lde[c * n + k]; n threads. */
__global__ void combine_columns(const uint32_t *lde, uint32_t *out, uint32_t n, uint32_t cols,
                                uint32_t alpha)
{
    uint32_t k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= n)
        return;
    uint32_t acc = 0;
    for (uint32_t c = cols; c-- > 0;)
        acc = bb_add(bb_mul(acc, alpha), lde[(size_t)c * n + k]);
    out[k] = acc;
}

/* out[j] = ((a + b) + beta * (a - b) / x_j) / 2 with a = in[j], b = in[j + half],
 * 1/x_j = shift_inv * omega_inv^j; half threads. */
__global__ void fri_fold(const uint32_t *in, uint32_t *out, uint32_t half, uint32_t beta,
                         uint32_t shift_inv, uint32_t omega_inv)
{
    uint32_t j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= half)
        return;
    uint32_t a = in[j], b = in[j + half];
    uint32_t x_inv = bb_mul(shift_inv, bb_pow(omega_inv, j));
    uint32_t d = bb_mul(bb_mul(bb_sub(a, b), beta), x_inv);
    out[j] = bb_mul(bb_add(bb_add(a, b), d), (BB_P + 1u) / 2u);
}

#endif /* PROVER_KERNELS_CUH */
