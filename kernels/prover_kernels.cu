/* prover_kernels.cu - libgpuaccel's replacement kernels for the bundled
 * prover's hot kernels (tests/apps/prover/kernels.cuh), built into the
 * fatbin the library embeds (see kernels/README.md).
 *
 * Owns: one `extern "C" __global__ ga_<original>` per swapped kernel, with
 * exactly the original's parameter list, and the device helpers they share
 * (Montgomery multiplication, the per-block power table, the Poseidon2
 * permutation).  kernels/table.txt maps each original's mangled name here.
 * Must never: change a single output word for any input the original
 * accepts (kernels/verify.cu checks this bit for bit), touch a word the
 * original does not write, or depend on the launch configuration beyond what
 * the table's flag allows.
 *
 * Exactness, the argument every kernel below relies on:
 *  - Additions are ga_add, which equals field.h's bb_add on every pair of
 *    32-bit words, canonical or not (proof at ga_add); subtractions of words
 *    that may be non-canonical are bb_sub itself, and ga_sub_c (equal to
 *    bb_sub for canonical operands) is used only where both operands are
 *    provably canonical.
 *  - Every original bb_mul(x, y) = (x * y) mod p is replaced by a Montgomery
 *    product ga_mm(x, yM) where yM = y * 2^32 mod p is canonical (< p).  For
 *    ANY 32-bit x this returns exactly (x * y) mod p, canonical (proof at
 *    ga_mm).  Only one operand of each product ever needs a Montgomery form:
 *    a kernel parameter (converted once) or a value this code produced.
 *  - bb_pow(g, e) is (g mod p)^e mod p with g^0 = 1 (even for g = 0); the
 *    power table computes the same integer through other multiplications.
 *    Field multiplication is exact and associative, so any product tree of
 *    the same factors reduces to the same canonical value.
 *
 * Launch contract (kernels/table.txt):
 *  - grid=program (hash_leaves, hash_nodes): indexed exactly like the
 *    original (blockIdx.x * blockDim.x + threadIdx.x, same bound), one
 *    output per thread, so any launch gives the original's result.
 *  - grid=any (all others): grid-stride loops over a flattened 3-D grid and
 *    block, correct for every grid and block shape; they cover the whole
 *    problem (all n / 2 butterflies, all n elements ...), which equals the
 *    original's result whenever the program's launch covered it, as the
 *    prover's always does (one thread per element, rounded up).
 *  - __launch_bounds__(1024) caps registers at 64, so any block size the
 *    original accepts (up to 1024 threads) launches. */
#include <stdint.h>

#include "../tests/apps/prover/field.h"
#include "../tests/apps/prover/poseidon2.h"

/* ---- Montgomery arithmetic over BabyBear, R = 2^32 ---------------------- */

#define GA_P 0x78000001u       /* BB_P */
#define GA_P_NINV 0x77ffffffu  /* -p^-1 mod 2^32 */
#define GA_ONE_M 0x0ffffffeu   /* 2^32 mod p: Montgomery form of 1 */
#define GA_R2 0x45dddde3u      /* 2^64 mod p: ga_mm(x, GA_R2) = x * 2^32 mod p */
#define GA_INV2_M 0x07ffffffu  /* Montgomery form of (p + 1) / 2 = 1/2 */

static_assert(GA_P == BB_P, "field.h and the Montgomery constants disagree");
static_assert((uint32_t)(GA_P * GA_P_NINV) == 0xffffffffu, "GA_P_NINV is not -p^-1");
static_assert(((1ull << 32) % GA_P) == GA_ONE_M, "GA_ONE_M");
static_assert((((uint64_t)GA_ONE_M << 32) % GA_P) == GA_R2, "GA_R2");
static_assert((((uint64_t)((GA_P + 1u) / 2u) << 32) % GA_P) == GA_INV2_M, "GA_INV2_M");

/* Montgomery product: a * b * 2^-32 mod p, canonical.
 * Exact whenever b < p (a any 32-bit value): t = a * b < 2^32 * p.  m makes
 * t + m * p divisible by 2^32 (m = t * (-p^-1) mod 2^32), and
 * t + m * p < 2^32 * p + 2^32 * p < 2^64, so the 64-bit sum cannot
 * overflow; u = (t + m * p) / 2^32 < 2p < 2^32 and u = a b 2^-32 (mod p).
 * min(u, u - p) (unsigned) is u - p when u >= p, and u when u < p (then
 * u - p wraps to u + 2^32 - p > u): the canonical residue.  Hence
 * ga_mm(x, yM) with yM = y 2^32 mod p equals (x * y) mod p = bb_mul(x, y)
 * for every 32-bit x and canonical y.
 * On the device the product is written in PTX (the pattern of sppark's and
 * ICICLE's Montgomery code) so that ptxas emits two IMAD.WIDE.U32 (a * b,
 * then m * p plus the 64-bit t) and one IMAD for m; written in C, LLVM
 * rewrites the 32-bit m = lo * (-p^-1) as a 64-bit multiply and mask.
 * madc.hi cannot carry out: its result u < 2p < 2^32 (above).  The host
 * branch (same arithmetic in C) serves host-side emulation tests only. */
static __device__ __forceinline__ uint32_t ga_mm(uint32_t a, uint32_t b)
{
    uint32_t u;
#ifdef __CUDA_ARCH__
    asm("{\n\t"
        ".reg .u32 lo, hi, m;\n\t"
        "mul.lo.u32 lo, %1, %2;\n\t"
        "mul.hi.u32 hi, %1, %2;\n\t"
        "mul.lo.u32 m, lo, %3;\n\t"
        "mad.lo.cc.u32 lo, m, %4, lo;\n\t"
        "madc.hi.u32 %0, m, %4, hi;\n\t"
        "}"
        : "=r"(u)
        : "r"(a), "r"(b), "n"(GA_P_NINV), "n"(GA_P));
#else
    uint64_t t = (uint64_t)a * b;
    uint32_t m = (uint32_t)t * GA_P_NINV;
    u = (uint32_t)((t + (uint64_t)m * GA_P) >> 32);
#endif
    return min(u, u - GA_P);
}

/* x * 2^32 mod p for any 32-bit x (ga_mm's bound holds: GA_R2 < p). */
static __device__ __forceinline__ uint32_t ga_to_m(uint32_t x)
{
    return ga_mm(x, GA_R2);
}

/* Canonical Montgomery form back to the plain canonical value. */
static __device__ __forceinline__ uint32_t ga_from_m(uint32_t xm)
{
    return ga_mm(xm, 1u);
}

/* == bb_add(a, b) for ALL 32-bit a, b.  bb_add computes s = a + b (mod 2^32)
 * and returns s >= p ? s - p : s.  min(s, s - p) (unsigned): when s >= p,
 * s - p < s does not wrap, so the min is s - p; when s < p, s - p wraps to
 * s + 2^32 - p > s, so the min is s.  Two instructions on sm_90 (IADD3 and
 * VIADDMNMX) where the ternary takes three (IADD3, ISETP, SEL / predicated
 * add). */
static __device__ __forceinline__ uint32_t ga_add(uint32_t a, uint32_t b)
{
    uint32_t s = a + b;
    return min(s, s - GA_P);
}

/* == bb_sub(a, b) when a, b < p (only there: a raw a could make d + p wrap).
 * a >= b: d = a - b < p and d + p < 2p < 2^32, min is d.  a < b: d wraps to
 * a - b + 2^32 >= 2^32 - p > p, d + p wraps to a - b + p < p, min is
 * d + p.  Both are bb_sub's values. */
static __device__ __forceinline__ uint32_t ga_sub_c(uint32_t a, uint32_t b)
{
    uint32_t d = a - b;
    return min(d, d + GA_P);
}

#include "grid.cuh" /* launch geometry for grid=any kernels */

/* ---- powers g^e from a per-block table ------------------------------------
 * The originals recompute bb_pow(g, e) per thread: up to 2 log2(e) 64-bit
 * modular multiplications.  Here a block builds, once, in shared memory
 *   tab[m][d] = s * g^(4 d 64^m)   (m < levels, d < 64, Montgomery form),
 * s an optional scale folded into level 0 (1 unless told otherwise), and a
 * thread gets s * g^e as the product of one entry per 6-bit digit of
 * q = e >> 2 times g^(e mod 4): levels - 1 products, plus one when e mod 4
 * != 0.  Vector paths ask for e = 4c and get e + 1..3 by three independent
 * products with g^1..3.  Exactness: the product's exponents add up to e
 * (digits of q, base 64) and field multiplication is exact, so the value is
 * s * (g mod p)^e mod p; for e = 0 every factor is an entry with d = 0, which
 * is s (1) by construction even when g = 0, as bb_pow(0, 0) = 1.
 * Digits: for vectors, consecutive threads have consecutive q, so the level-0
 * lookups of a warp hit 32 consecutive words (no bank conflict); higher
 * digits are mostly equal across the warp (broadcast). */
#define GA_WIN 64u
#define GA_MAX_LEVELS 5u /* q = e >> 2 < 2^30 = 64^5 */

typedef struct {
    const uint32_t *tab; /* shared, GA_MAX_LEVELS * GA_WIN words */
    uint32_t levels;
    uint32_t g1, g2, g3; /* Montgomery forms of g, g^2, g^3 */
} ga_pow_t;

/* Builds the table for exponents up to emax (all threads of the block must
 * call it with the same arguments: it ends with a barrier). */
static __device__ void ga_pow_init(ga_pow_t *pw, uint32_t *tab, uint32_t g, uint32_t scale_m,
                                   uint32_t emax)
{
    uint32_t q = emax >> 2, levels = 1;
    while (q >= GA_WIN) {
        q >>= 6;
        levels++;
    }
    const uint32_t gm = ga_to_m(g);
    for (uint32_t e = ga_tid(); e < levels * GA_WIN; e += ga_block_threads()) {
        uint32_t m = e >> 6, d = e & (GA_WIN - 1u);
        uint32_t b = gm, r = GA_ONE_M;
        for (uint32_t s = 0; s < 2u + 6u * m; s++) /* b = g^(4 * 64^m) */
            b = ga_mm(b, b);
        for (int bit = 5; bit >= 0; bit--) { /* r = b^d, square and multiply */
            r = ga_mm(r, r);
            if ((d >> bit) & 1u)
                r = ga_mm(r, b);
        }
        if (m == 0) /* the scale, once per product: level 0 only */
            r = ga_mm(r, scale_m);
        tab[e] = r;
    }
    pw->tab = tab;
    pw->levels = levels;
    pw->g1 = gm;
    pw->g2 = ga_mm(gm, gm);
    pw->g3 = ga_mm(pw->g2, gm);
    __syncthreads();
}

/* s * g^(4q) with q = e >> 2 (the low two bits of e are ignored). */
static __device__ __forceinline__ uint32_t ga_pow_get4(const ga_pow_t *pw, uint32_t e)
{
    uint32_t q = e >> 2;
    uint32_t w = pw->tab[q & (GA_WIN - 1u)];
    for (uint32_t m = 1; m < pw->levels; m++) {
        q >>= 6;
        w = ga_mm(w, pw->tab[m * GA_WIN + (q & (GA_WIN - 1u))]);
    }
    return w;
}

/* s * g^e for any e <= emax. */
static __device__ __forceinline__ uint32_t ga_pow_get(const ga_pow_t *pw, uint32_t e)
{
    uint32_t w = ga_pow_get4(pw, e), lo = e & 3u;
    if (lo)
        w = ga_mm(w, lo == 1u ? pw->g1 : lo == 2u ? pw->g2 : pw->g3);
    return w;
}

/* ---- ntt_layer -------------------------------------------------------------
 * Original (n / 2 threads): t < n/2, k = t % half, i = (t / half) 2 half + k,
 * w = bb_pow(root, k), u = data[i], v = bb_mul(data[i + half], w),
 * data[i] = bb_add(u, v), data[i + half] = bb_sub(u, v).
 * Replacement: 4 butterflies t = 4c .. 4c+3 per step.  When half % 4 == 0
 * they share the group t / half and have consecutive k, so both halves are
 * one aligned 16-byte vector each (i = (t / half) 2 half + k is a multiple
 * of 4 because half and k are);
 * half == 1 and half == 2 have their own 2 x 16-byte layouts; anything else
 * (and a misaligned pointer, and the n/2 mod 4 tail) goes one butterfly at a
 * time with the same formulas.  Every butterfly reads and writes exactly the
 * words its original thread does; butterflies touch disjoint words, so the
 * order does not matter.  half == 0 divides by zero in the original
 * (unspecified result): the replacement writes nothing then. */

static __device__ __forceinline__ void ga_bfly(uint32_t &u, uint32_t &x, uint32_t wm)
{
    uint32_t v = ga_mm(x, wm); /* == bb_mul(x, w) for every x */
    uint32_t a = ga_add(u, v), b = bb_sub(u, v); /* u may be any word: bb_sub */
    u = a;
    x = b;
}

static __device__ __forceinline__ void ga_ntt_one(uint32_t *data, uint32_t t, uint32_t half,
                                                  const ga_pow_t *pw)
{
    uint32_t k = t % half;
    uint32_t i = (t / half) * 2u * half + k;
    uint32_t u = data[i], x = data[i + half];
    ga_bfly(u, x, ga_pow_get(pw, k));
    data[i] = u;
    data[i + half] = x;
}

template <bool POW2>
static __device__ __forceinline__ void ga_ntt_vec(uint32_t *data, uint32_t nb, uint32_t half,
                                                  uint32_t lg, const ga_pow_t *pw)
{
    const uint64_t stride = ga_gstride();
    for (uint64_t c = ga_gid(); c < (nb >> 2); c += stride) {
        uint32_t t = (uint32_t)c << 2, q, k;
        if (POW2) {
            q = t >> lg;
            k = t & (half - 1u);
        } else {
            q = t / half;
            k = t % half;
        }
        uint32_t i = q * 2u * half + k; /* multiple of 4: half and k are */
        uint4 *plo = (uint4 *)(data + i), *phi = (uint4 *)(data + (uint32_t)(i + half));
        uint4 lo = *plo, hi = *phi;
        uint32_t w0 = ga_pow_get4(pw, k);
        uint32_t w1 = ga_mm(w0, pw->g1), w2 = ga_mm(w0, pw->g2), w3 = ga_mm(w0, pw->g3);
        ga_bfly(lo.x, hi.x, w0);
        ga_bfly(lo.y, hi.y, w1);
        ga_bfly(lo.z, hi.z, w2);
        ga_bfly(lo.w, hi.w, w3);
        *plo = lo;
        *phi = hi;
    }
}

extern "C" __global__ void __launch_bounds__(1024)
ga_ntt_layer(uint32_t *data, uint32_t n, uint32_t half, uint32_t root)
{
    __shared__ uint32_t tab[GA_MAX_LEVELS * GA_WIN];
    const uint32_t nb = n / 2u;
    if (nb == 0 || half == 0)
        return;
    ga_pow_t pw;
    ga_pow_init(&pw, tab, root, GA_ONE_M, (half < nb ? half : nb) - 1u);
    const uint64_t gid = ga_gid(), stride = ga_gstride();
    const int vec = ga_aligned16(data);
    uint64_t done = nb & ~3u; /* butterflies handled by a vector path */
    if (vec && (half & 3u) == 0) {
        if ((half & (half - 1u)) == 0)
            ga_ntt_vec<true>(data, nb, half, __ffs(half) - 1, &pw);
        else
            ga_ntt_vec<false>(data, nb, half, 0, &pw);
    } else if (vec && half == 1u) {
        /* butterfly t pairs words (2t, 2t + 1) with w = root^0 = 1 */
        for (uint64_t c = gid; c < (nb >> 2); c += stride) {
            uint4 *p = (uint4 *)(data + 8u * (uint32_t)c);
            uint4 a = p[0], b = p[1];
            ga_bfly(a.x, a.y, GA_ONE_M);
            ga_bfly(a.z, a.w, GA_ONE_M);
            ga_bfly(b.x, b.y, GA_ONE_M);
            ga_bfly(b.z, b.w, GA_ONE_M);
            p[0] = a;
            p[1] = b;
        }
    } else if (vec && half == 2u) {
        /* group q = words 4q..4q+3: (4q, 4q+2) with w = 1, (4q+1, 4q+3) with root */
        for (uint64_t c = gid; c < (nb >> 2); c += stride) {
            uint4 *p = (uint4 *)(data + 8u * (uint32_t)c);
            uint4 a = p[0], b = p[1];
            ga_bfly(a.x, a.z, GA_ONE_M);
            ga_bfly(a.y, a.w, pw.g1);
            ga_bfly(b.x, b.z, GA_ONE_M);
            ga_bfly(b.y, b.w, pw.g1);
            p[0] = a;
            p[1] = b;
        }
    } else {
        done = 0;
    }
    for (uint64_t t = done + gid; t < nb; t += stride)
        ga_ntt_one(data, (uint32_t)t, half, &pw);
}

/* ---- coset_shift: data[i] = bb_mul(data[i], bb_pow(shift, i)), i < n ------ */
extern "C" __global__ void __launch_bounds__(1024)
ga_coset_shift(uint32_t *data, uint32_t n, uint32_t shift)
{
    __shared__ uint32_t tab[GA_MAX_LEVELS * GA_WIN];
    if (n == 0)
        return;
    ga_pow_t pw;
    ga_pow_init(&pw, tab, shift, GA_ONE_M, n - 1u);
    const uint64_t gid = ga_gid(), stride = ga_gstride();
    uint64_t done = 0;
    if (ga_aligned16(data)) {
        done = n & ~3u;
        for (uint64_t c = gid; c < (n >> 2); c += stride) {
            uint32_t i = (uint32_t)c << 2;
            uint4 *p = (uint4 *)(data + i);
            uint4 x = *p;
            uint32_t w0 = ga_pow_get4(&pw, i);
            x.x = ga_mm(x.x, w0);
            x.y = ga_mm(x.y, ga_mm(w0, pw.g1));
            x.z = ga_mm(x.z, ga_mm(w0, pw.g2));
            x.w = ga_mm(x.w, ga_mm(w0, pw.g3));
            *p = x;
        }
    }
    for (uint64_t i = done + gid; i < n; i += stride)
        data[i] = ga_mm(data[i], ga_pow_get(&pw, (uint32_t)i));
}

/* ---- scale: data[i] = bb_mul(data[i], factor), i < n ---------------------- */
extern "C" __global__ void __launch_bounds__(1024)
ga_scale(uint32_t *data, uint32_t n, uint32_t factor)
{
    const uint32_t fm = ga_to_m(factor);
    const uint64_t gid = ga_gid(), stride = ga_gstride();
    uint64_t done = 0;
    if (ga_aligned16(data)) {
        done = n & ~3u;
        for (uint64_t c = gid; c < (n >> 2); c += stride) {
            uint4 *p = (uint4 *)(data + 4u * (uint32_t)c);
            uint4 x = *p;
            x.x = ga_mm(x.x, fm);
            x.y = ga_mm(x.y, fm);
            x.z = ga_mm(x.z, fm);
            x.w = ga_mm(x.w, fm);
            *p = x;
        }
    }
    for (uint64_t i = done + gid; i < n; i += stride)
        data[i] = ga_mm(data[i], fm);
}

/* ---- bit_reverse ------------------------------------------------------------
 * Original (n threads): j = __brev(i) >> (32 - log_n); if (i < j) swap
 * data[i], data[j].  For n = 2^log_n that is the permutation
 * data'[x] = data[brev(x)], and the replacement produces the same array by
 * 32 x 32 tiles: write x = (a, b, c) with a the top 5 bits, c the low 5 and
 * b the log_n - 10 in between; then brev(x) = (brev5(c), brev(b), brev5(a)).
 * The tile of all (a, *, c) with middle bits b is 32 rows of 32 contiguous
 * words, and it trades places with the tile of brev(b): one block loads
 * both (coalesced 128-byte rows into padded shared memory), synchronises,
 * and writes each back transposed and bit-reversed, again in 128-byte rows.
 * Shared memory rows are padded to 33 words, so the transposed read
 * (address brev5(s) * 33 + brev5(r), s = lane) hits 32 distinct banks.
 * Other shapes (n != 2^log_n, log_n < 10) run the original formula
 * (for n != 2^log_n the original is itself racy or out of bounds). */
#define GA_TILE 32u
#define GA_TPAD 33u

static __device__ __forceinline__ uint32_t ga_brev5(uint32_t x)
{
    return __brev(x) >> 27;
}

extern "C" __global__ void __launch_bounds__(1024)
ga_bit_reverse(uint32_t *data, uint32_t n, uint32_t log_n)
{
    __shared__ uint32_t ta[GA_TILE * GA_TPAD], tb[GA_TILE * GA_TPAD];
    const uint32_t nthr = ga_block_threads(), tid = ga_tid();
    if (log_n >= 10u && log_n <= 31u && n == (1u << log_n)) {
        const uint32_t mbits = log_n - 10u, row = 1u << (log_n - 5u);
        const uint64_t nblk = (uint64_t)gridDim.x * gridDim.y * gridDim.z;
        const uint64_t blk =
            blockIdx.x + (uint64_t)gridDim.x * (blockIdx.y + (uint64_t)gridDim.y * blockIdx.z);
        for (uint64_t b64 = blk; b64 < (1ull << mbits); b64 += nblk) {
            const uint32_t b = (uint32_t)b64;
            const uint32_t br = mbits ? __brev(b) >> (32u - mbits) : 0u;
            if (b > br) /* uniform across the block: the pair belongs to tile br */
                continue;
            const uint32_t *pa = data + 32u * b, *pb = data + 32u * br;
            for (uint32_t e = tid; e < GA_TILE * GA_TILE; e += nthr) {
                uint32_t a = e >> 5, c = e & 31u;
                ta[a * GA_TPAD + c] = pa[(size_t)a * row + c];
                if (br != b)
                    tb[a * GA_TPAD + c] = pb[(size_t)a * row + c];
            }
            __syncthreads();
            const uint32_t *src_for_b = br != b ? tb : ta;
            for (uint32_t e = tid; e < GA_TILE * GA_TILE; e += nthr) {
                uint32_t r = e >> 5, s = e & 31u;
                uint32_t off = ga_brev5(s) * GA_TPAD + ga_brev5(r);
                data[(size_t)r * row + 32u * b + s] = src_for_b[off];
                if (br != b)
                    data[(size_t)r * row + 32u * br + s] = ta[off];
            }
            __syncthreads();
        }
        return;
    }
    const uint64_t gid = ga_gid(), stride = ga_gstride();
    for (uint64_t i64 = gid; i64 < n; i64 += stride) {
        uint32_t i = (uint32_t)i64;
        uint32_t j = __brev(i) >> (32u - log_n);
        if (i < j) {
            uint32_t t = data[i];
            data[i] = data[j];
            data[j] = t;
        }
    }
}

/* ---- Poseidon2 permutation, Montgomery domain ------------------------------
 * Same rounds, constants and linear layers as poseidon2.h's p2_permute.
 * The state enters as raw 32-bit words (data may hold any value), so the
 * first external linear layer and the first round-constant addition run on
 * raw words exactly as in the original: ga_m4 / ga_external_linear are
 * p2_m4 / p2_external_linear with bb_add replaced by ga_add, equal on all
 * inputs.  The first S-box input x then goes to Montgomery form by ga_to_m,
 * which reduces any 32-bit x mod p (the original's first bb_mul does the
 * same).  From there every value is canonical, and ga_add of canonical
 * Montgomery forms is the Montgomery form of the sum, so the same linear
 * layers run on Montgomery forms; products use ga_mm, constants are stored
 * in Montgomery form (computed by the compiler from poseidon2.h's own
 * tables).  Internal diagonal: x * (p - 2) + sum == sum - 2x and
 * x * 2 == x + x as field elements, and ga_sub_c / ga_add of canonical
 * values are canonical, so the words match; the other diagonal entries use
 * ga_mm with (i + 1) in Montgomery form.  The state leaves in plain
 * canonical form (ga_from_m). */
static __device__ __forceinline__ void ga_m4(uint32_t *x)
{
    uint32_t t0 = ga_add(x[0], x[1]);
    uint32_t t1 = ga_add(x[2], x[3]);
    uint32_t t2 = ga_add(ga_add(x[1], x[1]), t1);
    uint32_t t3 = ga_add(ga_add(x[3], x[3]), t0);
    uint32_t t1x4 = ga_add(ga_add(t1, t1), ga_add(t1, t1));
    uint32_t t0x4 = ga_add(ga_add(t0, t0), ga_add(t0, t0));
    uint32_t t4 = ga_add(t1x4, t3);
    uint32_t t5 = ga_add(t0x4, t2);
    x[0] = ga_add(t3, t5);
    x[1] = t5;
    x[2] = ga_add(t2, t4);
    x[3] = t4;
}

static __device__ __forceinline__ void ga_external_linear(uint32_t *s)
{
#pragma unroll
    for (int c = 0; c < 4; c++)
        ga_m4(s + 4 * c);
#pragma unroll
    for (int r = 0; r < 4; r++) {
        uint32_t t = ga_add(ga_add(s[r], s[4 + r]), ga_add(s[8 + r], s[12 + r]));
#pragma unroll
        for (int c = 0; c < 4; c++)
            s[4 * c + r] = ga_add(s[4 * c + r], t);
    }
}

struct ga_p2_consts {
    uint32_t ext[P2_ROUNDS_F * P2_WIDTH];
    uint32_t in[P2_ROUNDS_P];
    uint32_t diag[P2_WIDTH];
};

static __host__ __device__ constexpr uint32_t ga_to_m_const(uint32_t x)
{
    return (uint32_t)(((uint64_t)x << 32) % GA_P);
}

static __host__ __device__ constexpr ga_p2_consts ga_p2_make_consts()
{
    ga_p2_consts k{};
    const uint32_t ext[P2_ROUNDS_F * P2_WIDTH] = P2_RC_EXT_INIT;
    const uint32_t in[P2_ROUNDS_P] = P2_RC_INT_INIT;
    for (int i = 0; i < P2_ROUNDS_F * P2_WIDTH; i++)
        k.ext[i] = ga_to_m_const(ext[i]);
    for (int i = 0; i < P2_ROUNDS_P; i++)
        k.in[i] = ga_to_m_const(in[i]);
    for (int i = 0; i < P2_WIDTH; i++)
        k.diag[i] = ga_to_m_const(i == 0 ? GA_P - 2u : (uint32_t)i + 1u);
    return k;
}

static __constant__ ga_p2_consts ga_p2k = ga_p2_make_consts();

static __device__ __forceinline__ uint32_t ga_sbox_m(uint32_t xm)
{
    uint32_t x2 = ga_mm(xm, xm);
    uint32_t x3 = ga_mm(x2, xm);
    uint32_t x4 = ga_mm(x2, x2);
    return ga_mm(x4, x3);
}

/* s: 16 raw words in, 16 plain canonical words out == p2_permute(s). */
static __device__ __forceinline__ void ga_p2_permute(uint32_t *s)
{
    ga_external_linear(s); /* on raw words, as the original */
#pragma unroll
    for (int i = 0; i < P2_WIDTH; i++) /* round 0: raw constant add, then reduce */
        s[i] = ga_sbox_m(ga_to_m(ga_add(s[i], p2_rc_ext_dev[i])));
    ga_external_linear(s);
#pragma unroll
    for (int r = 1; r < P2_ROUNDS_F / 2; r++) {
#pragma unroll
        for (int i = 0; i < P2_WIDTH; i++)
            s[i] = ga_sbox_m(ga_add(s[i], ga_p2k.ext[r * P2_WIDTH + i]));
        ga_external_linear(s);
    }
#pragma unroll
    for (int r = 0; r < P2_ROUNDS_P; r++) {
        s[0] = ga_sbox_m(ga_add(s[0], ga_p2k.in[r]));
        uint32_t sum = s[0];
#pragma unroll
        for (int i = 1; i < P2_WIDTH; i++)
            sum = ga_add(sum, s[i]);
        s[0] = ga_sub_c(sum, ga_add(s[0], s[0]));
        s[1] = ga_add(ga_add(s[1], s[1]), sum);
#pragma unroll
        for (int i = 2; i < P2_WIDTH; i++)
            s[i] = ga_add(ga_mm(s[i], ga_p2k.diag[i]), sum);
    }
#pragma unroll
    for (int r = P2_ROUNDS_F / 2; r < P2_ROUNDS_F; r++) {
#pragma unroll
        for (int i = 0; i < P2_WIDTH; i++)
            s[i] = ga_sbox_m(ga_add(s[i], ga_p2k.ext[r * P2_WIDTH + i]));
        ga_external_linear(s);
    }
#pragma unroll
    for (int i = 0; i < P2_WIDTH; i++)
        s[i] = ga_from_m(s[i]);
}

/* Out-of-line copy for the multi-chunk sponge loop: nvcc 13.0's cicc crashes
 * (segfault) on the fully unrolled permutation inlined into a loop.  The
 * state goes through 64 bytes of local memory per call, noise next to the
 * permutation's ~7000 instructions. */
static __device__ __noinline__ void ga_p2_permute_call(uint32_t *s)
{
    ga_p2_permute(s);
}

static __device__ __forceinline__ void ga_store8(uint32_t *out, const uint32_t *s, int vec)
{
    if (vec) {
        ((uint4 *)out)[0] = make_uint4(s[0], s[1], s[2], s[3]);
        ((uint4 *)out)[1] = make_uint4(s[4], s[5], s[6], s[7]);
    } else {
#pragma unroll
        for (int i = 0; i < P2_DIGEST; i++)
            out[i] = s[i];
    }
}

/* ---- hash_leaves (grid=program) --------------------------------------------
 * digests[r] = p2_hash_strided(data + r, width, stride), r < rows: the same
 * sponge (state[8] = width, chunks of 8 zero padded, at least one
 * permutation), the same element addresses (data + r + (start + i) * stride,
 * start + i in 32 bits as there), each permutation via ga_p2_permute.  Loads
 * stay 4-byte: for a fixed column they are coalesced across the warp (rows
 * are consecutive); the 32-byte digest goes out as two 16-byte stores when
 * digests is 16-byte aligned. */
extern "C" __global__ void __launch_bounds__(1024)
ga_hash_leaves(const uint32_t *data, uint32_t *digests, uint32_t rows, uint32_t width,
               uint32_t stride)
{
    uint32_t r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows)
        return;
    const uint32_t *d = data + r;
    uint32_t s[P2_WIDTH];
#pragma unroll
    for (int i = 0; i < P2_WIDTH; i++)
        s[i] = 0;
    s[P2_RATE] = width;
    if (width <= P2_RATE) { /* one chunk: the prover's FRI trees and up to 8 columns */
#pragma unroll
        for (uint32_t i = 0; i < P2_RATE; i++)
            s[i] = i < width ? d[(uint64_t)i * stride] : 0u;
        ga_p2_permute(s);
    } else {
        uint32_t start = 0;
        do {
#pragma unroll
            for (uint32_t i = 0; i < P2_RATE; i++)
                s[i] = start + i < width ? d[(uint64_t)(start + i) * stride] : 0u;
            ga_p2_permute_call(s);
            start += P2_RATE;
        } while (start < width);
    }
    ga_store8(digests + (size_t)r * 8, s, ga_aligned16(digests));
}

/* ---- hash_nodes (grid=program) ---------------------------------------------
 * parents[i] = p2_compress(children + 16 i, children + 16 i + 8), i < count:
 * state = left || right (four 16-byte loads when children is 16-byte
 * aligned), permute, out[k] = bb_add(state[k], left[k]) (as ga_add) with the
 * left words as loaded (the original re-reads them from memory; equal unless parents
 * overlaps children, which p2_compress forbids). */
extern "C" __global__ void __launch_bounds__(1024)
ga_hash_nodes(const uint32_t *children, uint32_t *parents, uint32_t count)
{
    uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= count)
        return;
    const uint32_t *c = children + (size_t)i * 16;
    uint32_t s[P2_WIDTH], left[P2_DIGEST];
    if (ga_aligned16(children)) {
#pragma unroll
        for (int v = 0; v < 4; v++) {
            uint4 x = ((const uint4 *)c)[v];
            s[4 * v] = x.x;
            s[4 * v + 1] = x.y;
            s[4 * v + 2] = x.z;
            s[4 * v + 3] = x.w;
        }
    } else {
#pragma unroll
        for (int k = 0; k < P2_WIDTH; k++)
            s[k] = c[k];
    }
#pragma unroll
    for (int k = 0; k < P2_DIGEST; k++)
        left[k] = s[k];
    ga_p2_permute(s);
#pragma unroll
    for (int k = 0; k < P2_DIGEST; k++)
        s[k] = ga_add(s[k], left[k]);
    ga_store8(parents + (size_t)i * 8, s, ga_aligned16(parents));
}

/* ---- combine_columns --------------------------------------------------------
 * out[k] = Horner over c = cols-1 .. 0 of acc = bb_add(bb_mul(acc, alpha),
 * lde[c n + k]), acc from 0.  acc may be any 32-bit word after a raw
 * bb_add, and ga_mm(acc, alpha_m) equals bb_mul(acc, alpha) for all of them.
 * 4 consecutive k per step as 16-byte vectors (when n % 4 == 0 and both
 * pointers are aligned), columns loaded 4 at a time ahead of the Horner
 * chain so each thread keeps several loads in flight. */
static __device__ __forceinline__ void ga_horner4(uint4 &acc, uint4 x, uint32_t am)
{
    acc.x = ga_add(ga_mm(acc.x, am), x.x);
    acc.y = ga_add(ga_mm(acc.y, am), x.y);
    acc.z = ga_add(ga_mm(acc.z, am), x.z);
    acc.w = ga_add(ga_mm(acc.w, am), x.w);
}

extern "C" __global__ void __launch_bounds__(1024)
ga_combine_columns(const uint32_t *lde, uint32_t *out, uint32_t n, uint32_t cols,
                   uint32_t alpha)
{
    const uint32_t am = ga_to_m(alpha);
    const uint64_t gid = ga_gid(), stride = ga_gstride();
    uint64_t done = 0;
    if ((n & 3u) == 0 && ga_aligned16(lde) && ga_aligned16(out)) {
        done = n;
        for (uint64_t ch = gid; ch < (n >> 2); ch += stride) {
            const uint32_t k = (uint32_t)ch << 2;
            uint4 acc = make_uint4(0, 0, 0, 0);
            uint32_t c = cols;
            for (; c >= 4u; c -= 4u) {
                uint4 x3 = *(const uint4 *)(lde + (size_t)(c - 1u) * n + k);
                uint4 x2 = *(const uint4 *)(lde + (size_t)(c - 2u) * n + k);
                uint4 x1 = *(const uint4 *)(lde + (size_t)(c - 3u) * n + k);
                uint4 x0 = *(const uint4 *)(lde + (size_t)(c - 4u) * n + k);
                ga_horner4(acc, x3, am);
                ga_horner4(acc, x2, am);
                ga_horner4(acc, x1, am);
                ga_horner4(acc, x0, am);
            }
            while (c-- > 0)
                ga_horner4(acc, *(const uint4 *)(lde + (size_t)c * n + k), am);
            *(uint4 *)(out + k) = acc;
        }
    }
    for (uint64_t k = done + gid; k < n; k += stride) {
        uint32_t acc = 0;
        for (uint32_t c = cols; c-- > 0;)
            acc = ga_add(ga_mm(acc, am), lde[(size_t)c * n + k]);
        out[k] = acc;
    }
}

/* ---- fri_fold ---------------------------------------------------------------
 * Original (half threads): a = in[j], b = in[j + half],
 * x_inv = bb_mul(shift_inv, bb_pow(omega_inv, j)),
 * d = bb_mul(bb_mul(bb_sub(a, b), beta), x_inv),
 * out[j] = bb_mul(bb_add(bb_add(a, b), d), (p + 1) / 2).
 * d is (a - b) * beta * shift_inv * omega_inv^j mod p whatever the grouping,
 * so the power table carries the scale beta * shift_inv in its level 0 and
 * d = ga_mm(bb_sub(a, b), table(j)): one product instead of three.  out
 * may alias in at j or j + half exactly as in the original (each j reads its
 * own two words before writing its own output word). */
static __device__ __forceinline__ uint32_t ga_fold1(uint32_t a, uint32_t b, uint32_t cm)
{
    uint32_t d = ga_mm(bb_sub(a, b), cm); /* a, b may be any words: bb_sub */
    return ga_mm(ga_add(ga_add(a, b), d), GA_INV2_M);
}

extern "C" __global__ void __launch_bounds__(1024)
ga_fri_fold(const uint32_t *in, uint32_t *out, uint32_t half, uint32_t beta,
            uint32_t shift_inv, uint32_t omega_inv)
{
    __shared__ uint32_t tab[GA_MAX_LEVELS * GA_WIN];
    if (half == 0)
        return;
    ga_pow_t pw;
    ga_pow_init(&pw, tab, omega_inv, ga_mm(ga_to_m(beta), ga_to_m(shift_inv)), half - 1u);
    const uint64_t gid = ga_gid(), stride = ga_gstride();
    uint64_t done = 0;
    if ((half & 3u) == 0 && ga_aligned16(in) && ga_aligned16(out)) {
        done = half;
        for (uint64_t c = gid; c < (half >> 2); c += stride) {
            const uint32_t j = (uint32_t)c << 2;
            uint4 a = *(const uint4 *)(in + j);
            uint4 b = *(const uint4 *)(in + (uint32_t)(j + half)); /* 32-bit, as there */
            uint32_t c0 = ga_pow_get4(&pw, j);
            uint4 o;
            o.x = ga_fold1(a.x, b.x, c0);
            o.y = ga_fold1(a.y, b.y, ga_mm(c0, pw.g1));
            o.z = ga_fold1(a.z, b.z, ga_mm(c0, pw.g2));
            o.w = ga_fold1(a.w, b.w, ga_mm(c0, pw.g3));
            *(uint4 *)(out + j) = o;
        }
    }
    for (uint64_t j = done + gid; j < half; j += stride)
        out[j] = ga_fold1(in[j], in[(uint32_t)(j + half)], ga_pow_get(&pw, (uint32_t)j));
}
