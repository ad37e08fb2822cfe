/* stwo_kernels.cu - replacements for NethermindEth/stwo-gpu's kernels (commit
 * 0d37a99): the batched circle FFT's layers and rescale (cuda/src/poly/rfft.cu,
 * ifft.cu, utils.cu) and the quotient accumulation (quotients.cu), built into
 * the fatbin the library embeds beside prover_kernels.cu.
 *
 * Owns: ga_stwo_batch_* and ga_stwo_accumulate_quotients, each with exactly
 * its original's parameter list, and the M31 / CM31 / QM31 arithmetic they
 * need, written here to the letter of
 * stwo-gpu's cuda/src/fields.cu (read, not copied: each function below
 * performs the same 64-bit integer operations, so it returns the same word
 * for every input, canonical or not).
 * Must never: change an output word for any launch stwo-gpu makes, nor write
 * a word the original does not (kernels/verify_public.cu loads the original
 * from the program that carries it and compares bit for bit).
 *
 * Not replaced: the out-of-domain evaluation's eval_at_point_first_pass and
 * second_pass (cuda/src/poly/eval_at_point.cu). A warp-shuffle fold was
 * bit-identical on an H200 but 0.59x and 1.16x the originals: every warp
 * folds at every level, about three times the warp-wide QM31 products of the
 * original's halving tree, and these kernels are bound by those products. */
#include <stdint.h>

#include "grid.cuh"

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

/* fields.cu's neg: P - a in 32 bits. */
__device__ __forceinline__ m31 neg(m31 a)
{
    return (m31)(GA_M31_P - a);
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

} /* namespace ga_stwo */

/* ---- the batched circle FFT (cuda/src/poly/rfft.cu, ifft.cu, utils.cu) ----
 *
 * The originals run one radix-2 layer a launch over every column: blockIdx.x
 * picks the column, blockIdx.y and threadIdx.x the butterfly, and each
 * butterfly costs stwo-gpu's out-of-line add, sub and mul (and get_twiddle,
 * itself a call). The replacements are grid=any: a work item is up to four
 * butterflies of one column whose words lie side by side (the circle layers'
 * pairs (2i, 2i + 1); the line layers' l, l + 1, ... at idx0 and at idx1), read
 * and written as 16-byte vectors where the column is 16-byte aligned, each
 * butterfly the original's expression inline. Each word is written by one
 * butterfly, from the words the original's reads, with the original's twiddle:
 * the same words. Tails and unaligned columns take the scalar path. */

namespace ga_stwo {

/* utils.cu's get_twiddle: the circle layer's twiddle of butterfly i. */
__device__ __forceinline__ m31 circle_twiddle(const m31 *tw, uint32_t i)
{
    uint32_t k = i >> 2;
    switch (i & 3u) {
    case 0: return tw[2 * k + 1];
    case 1: return neg(tw[2 * k + 1]);
    case 2: return neg(tw[2 * k]);
    default: return tw[2 * k];
    }
}

/* rfft's butterfly (evaluation) and ifft's (interpolation), on x[a], x[b]. */
__device__ __forceinline__ void rfft_fly(m31 &a, m31 &b, m31 t)
{
    m31 v0 = a, temp = mul(b, t);
    a = add(v0, temp);
    b = sub(v0, temp);
}

__device__ __forceinline__ void ifft_fly(m31 &a, m31 &b, m31 t)
{
    m31 v0 = a, v1 = b;
    a = add(v0, v1);
    b = mul(sub(v0, v1), t);
}

template <bool INVERSE>
__device__ __forceinline__ void fly(m31 &a, m31 &b, m31 t)
{
    INVERSE ? ifft_fly(a, b, t) : rfft_fly(a, b, t);
}

__device__ __forceinline__ uint4 load4(const m31 *p)
{
    return *(const uint4 *)p;
}

__device__ __forceinline__ void store4(m31 *p, uint4 v)
{
    *(uint4 *)p = v;
}

/* A circle layer: butterflies i < n of column c on (2i, 2i + 1), twiddle
 * circle_twiddle(tw, i); items of two butterflies (four words). */
template <bool INVERSE>
__device__ __forceinline__ void circle_layer(m31 *const *values, const m31 *tw, uint32_t cols,
                                             uint32_t n)
{
    const uint64_t per_col = (n + 1) / 2, items = per_col * cols;
    for (uint64_t it = ga_gid(); it < items; it += ga_gstride()) {
        m31 *col = values[it / per_col];
        uint32_t i = (uint32_t)(it % per_col) * 2;
        if (i + 1 < n && ga_aligned16(col + 2 * i)) {
            uint4 v = load4(col + 2 * i);
            m31 t0 = circle_twiddle(tw, i), t1 = circle_twiddle(tw, i + 1);
            fly<INVERSE>(v.x, v.y, t0), fly<INVERSE>(v.z, v.w, t1);
            store4(col + 2 * i, v);
            continue;
        }
        for (uint32_t j = i; j < i + 2 && j < n; j++) {
            m31 a = col[2 * j], b = col[2 * j + 1], t = circle_twiddle(tw, j);
            fly<INVERSE>(a, b, t);
            col[2 * j] = a, col[2 * j + 1] = b;
        }
    }
}

/* A line layer: butterfly idx < n of column c on idx0 = (h << (layer + 1)) + l
 * and idx0 + 2^layer, h = idx >> layer, l its low bits, twiddle tw[h]; items of
 * four butterflies (one h when 2^layer >= 4; two when 2^layer is 2: one
 * 16-byte vector holds both pairs). */
template <bool INVERSE>
__device__ __forceinline__ void line_layer(m31 *const *values, const m31 *tw, uint32_t cols,
                                           uint32_t n, uint32_t layer)
{
    const uint32_t np = 1u << layer;
    const uint64_t per_col = (n + 3) / 4, items = per_col * cols;
    for (uint64_t it = ga_gid(); it < items; it += ga_gstride()) {
        m31 *col = values[it / per_col];
        const uint32_t idx = (uint32_t)(it % per_col) * 4;
        const uint32_t h = idx >> layer, l = idx & (np - 1);
        const uint32_t i0 = (h << (layer + 1)) + l, i1 = i0 + np;
        if (idx + 3 < n && np >= 4 && ga_aligned16(col + i0) && ga_aligned16(col + i1)) {
            uint4 a = load4(col + i0), b = load4(col + i1);
            m31 t = tw[h];
            fly<INVERSE>(a.x, b.x, t), fly<INVERSE>(a.y, b.y, t);
            fly<INVERSE>(a.z, b.z, t), fly<INVERSE>(a.w, b.w, t);
            store4(col + i0, a), store4(col + i1, b);
            continue;
        }
        if (idx + 3 < n && np == 2 && ga_aligned16(col + i0) && ga_aligned16(col + i0 + 4)) {
            /* idx .. idx + 3: h and h + 1, each the pairs (4h, 4h + 2), (4h + 1, 4h + 3) */
            uint4 v = load4(col + i0), w = load4(col + i0 + 4);
            m31 t0 = tw[h], t1 = tw[h + 1];
            fly<INVERSE>(v.x, v.z, t0), fly<INVERSE>(v.y, v.w, t0);
            fly<INVERSE>(w.x, w.z, t1), fly<INVERSE>(w.y, w.w, t1);
            store4(col + i0, v), store4(col + i0 + 4, w);
            continue;
        }
        for (uint32_t k = idx; k < idx + 4 && k < n; k++) {
            uint32_t hk = k >> layer, j0 = (hk << (layer + 1)) + (k & (np - 1)), j1 = j0 + np;
            m31 a = col[j0], b = col[j1], t = tw[hk];
            fly<INVERSE>(a, b, t);
            col[j0] = a, col[j1] = b;
        }
    }
}

/* The originals' bounds: columns below a positive count, butterflies below
 * rows / 2 (an int shifted: rows <= 1 leaves none). */
__device__ __forceinline__ uint32_t count_of(int v)
{
    return v > 0 ? (uint32_t)v : 0u;
}

} /* namespace ga_stwo */

/* batch_rfft_circle_part and batch_ifft_circle_part(m31 **values,
 * m31 *inverse_twiddles_tree, int columns, int number_of_rows): the same
 * parameters (ifft's third is named values_size, and counts columns too). */
#define GA_STWO_CIRCLE_KERNEL(name, inverse)                                                   \
    extern "C" __global__ void __launch_bounds__(1024)                                          \
    name(uint32_t **values, uint32_t *twiddles, int columns, int number_of_rows)               \
    {                                                                                           \
        ga_stwo::circle_layer<inverse>(values, twiddles, ga_stwo::count_of(columns),            \
                                       ga_stwo::count_of(number_of_rows >> 1));                 \
    }
GA_STWO_CIRCLE_KERNEL(ga_stwo_batch_rfft_circle_part, false)
GA_STWO_CIRCLE_KERNEL(ga_stwo_batch_ifft_circle_part, true)

/* batch_rfft_line_part(m31 **values, m31 *inverse_twiddles_tree, int number_of_columns,
 *                      int number_of_rows, int layer_domain_offset, int layer) */
extern "C" __global__ void __launch_bounds__(1024)
ga_stwo_batch_rfft_line_part(uint32_t **values, uint32_t *twiddles, int number_of_columns,
                             int number_of_rows, int layer_domain_offset, int layer)
{
    ga_stwo::line_layer<false>(values, twiddles + layer_domain_offset,
                               ga_stwo::count_of(number_of_columns),
                               ga_stwo::count_of(number_of_rows >> 1), (uint32_t)layer);
}

/* batch_ifft_line_part(m31 **values, m31 *twiddles, int values_size,
 *                      int number_of_rows, int layer) */
extern "C" __global__ void __launch_bounds__(1024)
ga_stwo_batch_ifft_line_part(uint32_t **values, uint32_t *twiddles, int values_size,
                             int number_of_rows, int layer)
{
    ga_stwo::line_layer<true>(values, twiddles, ga_stwo::count_of(values_size),
                              ga_stwo::count_of(number_of_rows >> 1), (uint32_t)layer);
}

/* batch_rescale(m31 **values, int values_size, int number_of_rows, m31 factor):
 * every word times factor, four a 16-byte vector. */
extern "C" __global__ void __launch_bounds__(1024)
ga_stwo_batch_rescale(uint32_t **values, int values_size, int number_of_rows, uint32_t factor)
{
    using namespace ga_stwo;
    const uint32_t cols = count_of(values_size), n = count_of(number_of_rows);
    const uint64_t per_col = (n + 3) / 4, items = per_col * cols;
    for (uint64_t it = ga_gid(); it < items; it += ga_gstride()) {
        m31 *col = values[it / per_col];
        const uint32_t i = (uint32_t)(it % per_col) * 4;
        if (i + 3 < n && ga_aligned16(col + i)) {
            uint4 v = load4(col + i);
            v.x = mul(v.x, factor), v.y = mul(v.y, factor), v.z = mul(v.z, factor),
            v.w = mul(v.w, factor);
            store4(col + i, v);
            continue;
        }
        for (uint32_t k = i; k < i + 4 && k < n; k++)
            col[k] = mul(col[k], factor);
    }
}

/* ---- the quotients (cuda/src/quotients.cu, include/point.cuh) ------------
 *
 * accumulate_quotients_in_gpu computes, for each row of the extended domain,
 * the domain point (the circle generator to a power: point_pow's 31 squarings
 * and multiplications), one CM31 inverse per sample batch (an M31 inverse:
 * 37 products), and the batches' numerators over their columns; every M31
 * operation of it is a call in stwo-gpu's -rdc build. The replacement runs the
 * same operations in the same order inline, computing each batch's
 * denominator inverse where it is used (and storing it where the original
 * does: the buffer is the original's output too). */

namespace ga_stwo {

struct point {
    m31 x, y;
};

/* quotients.cu's column_sample_batch, as laid out in memory. */
struct sample_batch {
    qm31 px, py; /* secure_field_point */
    uint32_t *columns;
    qm31 *values;
    uint32_t size;
};

__device__ __forceinline__ cm31 mul_by_scalar(cm31 x, m31 s)
{
    return {mul(x.a, s), mul(x.b, s)};
}

__device__ __forceinline__ qm31 mul_by_scalar(qm31 x, m31 s)
{
    return {mul_by_scalar(x.a, s), mul_by_scalar(x.b, s)};
}

__device__ __forceinline__ qm31 sub(qm31 x, qm31 y)
{
    return {sub(x.a, y.a), sub(x.b, y.b)};
}

/* fields.cu's mul(qm31, cm31): each half times the CM31 value. */
__device__ __forceinline__ qm31 mul(qm31 x, cm31 y)
{
    return {mul(x.a, y), mul(x.b, y)};
}

/* fields.cu's pow_to_power_of_two and inv (M31, then CM31). */
__device__ __forceinline__ m31 sqn(int n, m31 t)
{
    for (int i = 0; i < n; i++)
        t = mul(t, t);
    return t;
}

__device__ __forceinline__ m31 inv(m31 t)
{
    m31 t0 = mul(sqn(2, t), t);
    m31 t1 = mul(sqn(1, t0), t0);
    m31 t2 = mul(sqn(3, t1), t0);
    m31 t3 = mul(sqn(1, t2), t0);
    m31 t4 = mul(sqn(8, t3), t3);
    m31 t5 = mul(sqn(8, t4), t3);
    return mul(sqn(7, t5), t2);
}

__device__ __forceinline__ cm31 inv(cm31 t)
{
    m31 factor = inv(add(mul(t.a, t.a), mul(t.b, t.b)));
    return {mul(t.a, factor), mul(neg(t.b), factor)};
}

/* point.cuh's point_mul and point_pow. */
__device__ __forceinline__ point point_mul(point p1, point p2)
{
    return {sub(mul(p1.x, p2.x), mul(p1.y, p2.y)), add(mul(p1.x, p2.y), mul(p1.y, p2.x))};
}

__device__ __forceinline__ point point_pow(point p, int exponent)
{
    point result = {1, 0};
    while (exponent > 0) {
        if (exponent & 1)
            result = point_mul(p, result);
        p = point_mul(p, p);
        exponent >>= 1;
    }
    return result;
}

/* quotients.cu's domain_at_index: the circle generator (2, 1268011823) to
 * the coset's index, the second half mirrored. */
__device__ __forceinline__ point domain_at(uint32_t first, uint32_t step, uint32_t index,
                                           uint32_t domain_size)
{
    const point gen = {2, 1268011823};
    uint32_t half = domain_size >> 1;
    if (index < half) {
        uint64_t g = (uint64_t)first + (uint64_t)step * (uint64_t)index;
        return point_pow(gen, (int)(uint32_t)(g & 0x7fffffffu));
    }
    uint64_t g = (uint64_t)first + (uint64_t)step * (uint64_t)(index - half);
    return point_pow(gen, (int)(uint32_t)((2147483648ull - g) & 0x7fffffffu));
}

/* quotients.cu's denominator_inverse for one batch. */
__device__ __forceinline__ cm31 denominator_inverse(const sample_batch &b, point d)
{
    cm31 first = {sub(b.px.a.a, d.x), b.px.a.b};
    cm31 second = {sub(b.py.a.a, d.y), b.py.a.b};
    return inv(sub(mul(first, b.py.b), mul(second, b.px.b)));
}

} /* namespace ga_stwo */

/* accumulate_quotients_in_gpu(uint32_t half_coset_initial_index,
 *   uint32_t half_coset_step_size, uint32_t domain_size, int domain_log_size,
 *   m31 **columns, uint32_t number_of_columns, qm31 random_coefficient,
 *   column_sample_batch *sample_batches, uint32_t sample_size,
 *   uint32_t *result_column_0 .. _3, qm31 *flattened_line_coeffs,
 *   uint32_t *line_coeffs_sizes, qm31 *batch_random_coeffs,
 *   cm31 *denominator_inverses); grid=program: row = the thread's index. */
extern "C" __global__ void __launch_bounds__(1024)
ga_stwo_accumulate_quotients(uint32_t first, uint32_t step, uint32_t domain_size,
                             int domain_log_size, uint32_t **columns, uint32_t number_of_columns,
                             ga_stwo::qm31 random_coefficient, ga_stwo::sample_batch *batches,
                             uint32_t sample_size, uint32_t *out0, uint32_t *out1, uint32_t *out2,
                             uint32_t *out3, ga_stwo::qm31 *line_coeffs, uint32_t *line_coeffs_sizes,
                             ga_stwo::qm31 *batch_random_coeffs, ga_stwo::cm31 *denominator_inverses)
{
    using namespace ga_stwo;
    (void)number_of_columns, (void)random_coefficient; /* unused by the original too */
    int row = threadIdx.x + blockDim.x * blockIdx.x;
    if (!((uint32_t)row < domain_size)) /* the original's int-to-unsigned comparison */
        return;
    cm31 *den = &denominator_inverses[(uint32_t)row * sample_size];
    uint32_t index = __brev((uint32_t)row) >> (32 - domain_log_size);
    point d = domain_at(first, step, index, domain_size);
    qm31 acc = {{0, 0}, {0, 0}};
    int offset = 0;
    for (uint32_t i = 0; i < sample_size; i++) {
        const sample_batch &b = batches[i];
        cm31 di = denominator_inverse(b, d);
        den[i] = di;
        const qm31 *lc = &line_coeffs[offset * 3];
        int n = (int)line_coeffs_sizes[i];
        qm31 numerator = {{0, 0}, {0, 0}};
        for (int j = 0; j < n; j++) {
            qm31 a = lc[3 * j], bb = lc[3 * j + 1], c = lc[3 * j + 2];
            uint32_t col = b.columns[j];
            qm31 linear = add(mul_by_scalar(a, d.y), bb);
            qm31 value = mul_by_scalar(c, columns[col][row]);
            numerator = add(numerator, sub(value, linear));
        }
        acc = add(mul(acc, batch_random_coeffs[i]), mul(numerator, di));
        offset += n;
    }
    out0[row] = acc.a.a, out1[row] = acc.a.b, out2[row] = acc.b.a, out3[row] = acc.b.b;
}
