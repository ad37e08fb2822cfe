/* stwo_kernels.cu - replacements for NethermindEth/stwo-gpu's out-of-domain
 * evaluation kernels (cuda/src/poly/eval_at_point.cu, commit 0d37a99), built
 * into the fatbin the library embeds beside prover_kernels.cu.
 *
 * Owns: ga_stwo_eval_first_pass and ga_stwo_eval_second_pass, with exactly
 * the parameter lists of eval_at_point_first_pass and _second_pass, and the
 * M31 / CM31 / QM31 arithmetic they need, written here to the letter of
 * stwo-gpu's cuda/src/fields.cu (read, not copied: each function below
 * performs the same 64-bit integer operations, so it returns the same word
 * for every input, canonical or not).
 * Must never: change an output word for any launch stwo-gpu makes, nor write
 * a word the original does not (kernels/verify.cu loads the original from
 * the program that carries it and compares bit for bit).
 *
 * What the originals do. eval_at_point(coeffs, n, x, y) folds n coefficients
 * with log2(n) factors f (the point's doubled x-coordinates): level 1 makes
 * node i = c[2i] + c[2i+1] * f (a QM31 from two M31 words), every later level
 * node i = node 2i + node 2i+1 * f', one factor per level, a block folding
 * 512 values into one; a second kernel folds the blocks' results the same
 * way, 512 at a time, until one is left. The originals keep each level in
 * shared memory behind two barriers, and stwo-gpu builds with -rdc=true and
 * its field arithmetic in another file, so every M31 operation is a call.
 *
 * Why these are faster: the field arithmetic is inline; thread t folds its
 * own pair from global memory straight into its level-1 node; node j of
 * level k lives in thread j * 2^(k-1), so the next level's partner is
 * shfl_down by 2^(k-1): five levels inside a warp with no barrier, then the
 * warps' nodes meet in shared memory once and warp 0 folds the last three.
 *
 * Why the output is the same: every node is computed by the same expression
 * from the same two children (left + right * factor, the same factor) as the
 * original's; only where the children are kept differs. The number of levels
 * is the original's (level_size halved until zero: floor(log2) of the pairs,
 * plus the first), so a count that is not a power of two drops the same odd
 * nodes. Launch contract (grid=program): the program's own grid and block,
 * as stwo-gpu launches them (256 threads; a block folds 2 * 256 values). */
#include <stdint.h>

namespace ga_stwo {

typedef uint32_t m31;
struct cm31 {
    m31 a, b;
};
struct qm31 {
    cm31 a, b;
};
#define GA_M31_P 2147483647u

/* fields.cu's mul: (v + ((v + (v >> 31)) >> 31)) & P on the 64-bit product. */
__device__ __forceinline__ m31 mul(m31 a, m31 b)
{
    uint64_t v = (uint64_t)a * (uint64_t)b;
    uint64_t w = v + (v >> 31);
    uint64_t u = v + (w >> 31);
    return (m31)(u & GA_M31_P);
}

/* fields.cu's add: min(sum, sum - P) over 64 bits, truncated to 32. */
__device__ __forceinline__ m31 add(m31 a, m31 b)
{
    uint64_t sum = (uint64_t)a + (uint64_t)b;
    uint64_t red = sum - GA_M31_P;
    return (m31)(red < sum ? red : sum);
}

/* fields.cu's sub: add(a, P - b), the difference taken in 32 bits. */
__device__ __forceinline__ m31 sub(m31 a, m31 b)
{
    return add(a, (m31)(GA_M31_P - b));
}

__device__ __forceinline__ cm31 mul(cm31 x, cm31 y)
{
    return {sub(mul(x.a, y.a), mul(x.b, y.b)), add(mul(x.a, y.b), mul(x.b, y.a))};
}

__device__ __forceinline__ cm31 add(cm31 x, cm31 y)
{
    return {add(x.a, y.a), add(x.b, y.b)};
}

__device__ __forceinline__ cm31 sub(cm31 x, cm31 y)
{
    return {sub(x.a, y.a), sub(x.b, y.b)};
}

/* fields.cu's Karatsuba product, R = 2 + i. */
__device__ __forceinline__ qm31 mul(qm31 x, qm31 y)
{
    const cm31 r = {2, 1};
    cm31 v0 = mul(x.a, y.a);
    cm31 v1 = mul(x.b, y.b);
    cm31 v2 = mul(add(x.a, x.b), add(y.a, y.b));
    return {add(v0, mul(r, v1)), sub(v2, add(v0, v1))};
}

__device__ __forceinline__ qm31 add(qm31 x, qm31 y)
{
    return {add(x.a, y.a), add(x.b, y.b)};
}

/* One fold: the original's add(a, mul(b, factor)). */
__device__ __forceinline__ qm31 fold(qm31 a, qm31 b, qm31 f)
{
    return add(a, mul(b, f));
}

/* The original's first level: c[2i] = alpha, c[2i+1] = beta. */
__device__ __forceinline__ qm31 fold_pair(m31 alpha, m31 beta, qm31 f)
{
    return {{add(mul(beta, f.a.a), alpha), mul(f.a.b, beta)},
            {mul(beta, f.b.a), mul(beta, f.b.b)}};
}

__device__ __forceinline__ qm31 shfl_down(qm31 v, unsigned s)
{
    v.a.a = __shfl_down_sync(0xffffffffu, v.a.a, s);
    v.a.b = __shfl_down_sync(0xffffffffu, v.a.b, s);
    v.b.a = __shfl_down_sync(0xffffffffu, v.b.a, s);
    v.b.b = __shfl_down_sync(0xffffffffu, v.b.b, s);
    return v;
}

__device__ __forceinline__ qm31 load_q(const qm31 *p)
{
    if (((uintptr_t)p & 15u) == 0) {
        uint4 w = *(const uint4 *)p;
        return {{w.x, w.y}, {w.z, w.w}};
    }
    return *p;
}

/* Folds the level-1 nodes (thread t holds node t, t < pairs; the others hold
 * anything) with factors[fi], factors[fi - 1], ... one per level, as long as
 * the original's level count runs (pairs >> level > 0). Every thread of the
 * block calls it. Returns the root in thread 0. */
__device__ __forceinline__ qm31 fold_block(qm31 v, unsigned pairs, const qm31 *factors, int fi)
{
    __shared__ qm31 warp_node[32];
    const unsigned t = threadIdx.x, lane = t & 31u, warp = t >> 5;
    unsigned level = 1; /* levels done; the next has pairs >> level nodes */
    for (unsigned s = 1; s < 32 && (pairs >> level) != 0; s <<= 1, level++, fi--)
        v = fold(v, shfl_down(v, s), factors[fi]);
    if ((pairs >> level) == 0)
        return v;
    /* level 6: node w lives in lane 0 of warp w, w < pairs >> 5 (<= 32) */
    if (lane == 0)
        warp_node[warp] = v;
    __syncthreads();
    if (warp != 0)
        return v;
    v = warp_node[lane < (blockDim.x >> 5) ? lane : 0];
    for (unsigned s = 1; (pairs >> level) != 0; s <<= 1, level++, fi--)
        v = fold(v, shfl_down(v, s), factors[fi]);
    return v;
}

} /* namespace ga_stwo */

/* eval_at_point_first_pass(m31 *g_coeffs, qm31 *temp, qm31 *factors,
 *                          int coeffs_size, int factors_size, int output_offset) */
extern "C" __global__ void __launch_bounds__(1024)
ga_stwo_eval_first_pass(uint32_t *g_coeffs, ga_stwo::qm31 *temp, ga_stwo::qm31 *factors,
                        int coeffs_size, int factors_size, int output_offset)
{
    using namespace ga_stwo;
    const unsigned t = threadIdx.x;
    const unsigned pairs = (unsigned)(coeffs_size >= 512 ? 512 : coeffs_size) >> 1;
    const m31 *c = g_coeffs + 2u * blockIdx.x * blockDim.x;
    qm31 v = {{0, 0}, {0, 0}};
    if (t < pairs) {
        m31 alpha, beta;
        if (((uintptr_t)c & 7u) == 0) {
            uint2 w = ((const uint2 *)c)[t];
            alpha = w.x, beta = w.y;
        } else {
            alpha = c[2 * t], beta = c[2 * t + 1];
        }
        v = fold_pair(alpha, beta, factors[factors_size - 1]);
    }
    if (pairs == 0)
        return; /* the original writes its uninitialized shared word: nothing to match */
    v = fold_block(v, pairs, factors, factors_size - 2);
    if (t == 0)
        temp[output_offset + blockIdx.x] = v;
}

/* eval_at_point_second_pass(qm31 *temp, qm31 *factors, int level_size,
 *                           int factor_offset, int level_offset, int output_offset) */
extern "C" __global__ void __launch_bounds__(1024)
ga_stwo_eval_second_pass(ga_stwo::qm31 *temp, ga_stwo::qm31 *factors, int level_size,
                         int factor_offset, int level_offset, int output_offset)
{
    using namespace ga_stwo;
    const unsigned t = threadIdx.x;
    const unsigned pairs = (unsigned)(level_size >= 512 ? 512 : level_size) >> 1;
    const qm31 *level = temp + level_offset + 2u * blockIdx.x * blockDim.x;
    qm31 v = {{0, 0}, {0, 0}};
    if (t < pairs)
        v = fold(load_q(level + 2 * t), load_q(level + 2 * t + 1), factors[factor_offset]);
    if (pairs == 0)
        return;
    v = fold_block(v, pairs, factors, factor_offset - 1);
    if (t == 0)
        temp[output_offset + blockIdx.x] = v;
}
