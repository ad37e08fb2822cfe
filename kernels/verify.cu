/* verify.cu - proves libgpuaccel's replacement kernels (prover_kernels.cu)
 * bit-identical to the prover's originals (tests/apps/prover/kernels.cuh)
 * and measures both.
 *
 * Owns: the comparison harness.  For every pair it runs original and
 * replacement on copies of the same fresh random input (uniform field
 * elements salted with edge values 0, 1, p-1, ..., and in every other case
 * arbitrary 32-bit words, since the replacements claim exactness for those
 * too), at several sizes (odd ones included), scalar arguments (random,
 * edge, raw, real roots of unity), pointer alignments (a 4-byte offset takes
 * the scalar paths) and launch configurations: the prover's own 64-thread
 * blocks and others for the original; for grid=any replacements also odd,
 * tiny, 2-D/3-D and the occupancy-sized grid the library would pick.
 * Output buffers are poisoned (differently for the two runs) so an unwritten
 * word is a mismatch, and guard words after every buffer catch stray writes.
 * Then it times each kernel (CUDA events, warm-up, median of repeats) at
 * sizes that fill the GPU, next to a device-to-device cudaMemcpy measured in
 * the same run.
 * Must never: be built into the library (it is a test program).
 *
 * Build:  nvcc -O3 -arch=sm_90 -o verify kernels/verify.cu
 * Usage:  verify [--kernel NAME] [--quick] [--seed S] [--no-timing]
 * Exit:   0 all comparisons matched, 1 a mismatch or CUDA error,
 *         2 bad option, 77 "SKIP: no CUDA device". */
#include <cuda_runtime.h>

#include <algorithm>
#include <functional>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <string>
#include <time.h>
#include <vector>

#define HARNESS_NAME "verify"
#include "harness.cuh"

#include "../tests/apps/prover/kernels.cuh" /* the originals */
#include "prover_kernels.cu"                /* the replacements */

/* ---- basics --------------------------------------------------------------- */

static const uint32_t P = BB_P;
static const uint32_t EDGE_FIELD[] = {0u, 1u, P - 1u, 2u, P - 2u, (P - 1u) / 2u, (P + 1u) / 2u};
static const uint32_t EDGE_RAW[] = {P,         P + 1u,     2u * P - 1u, 2u * P, 2u * P + 1u,
                                    0xffffffffu, 0x80000000u, 0u,          1u,     P - 1u};
#define NELEMS(a) (sizeof(a) / sizeof((a)[0]))

/* raw == 0: field elements (1 in 16 an edge value); raw == 1: any 32-bit word
 * (1 in 16 an edge value around p, 2p, 2^31, 2^32). */
static uint32_t rand_word(Rng &r, int raw)
{
    uint64_t x = r.next();
    if ((x & 15u) == 0)
        return raw ? EDGE_RAW[(x >> 8) % NELEMS(EDGE_RAW)]
                   : EDGE_FIELD[(x >> 8) % NELEMS(EDGE_FIELD)];
    return raw ? (uint32_t)(x >> 32) : (uint32_t)((x >> 32) % P);
}

static std::vector<uint32_t> rand_words(Rng &r, size_t n, int raw)
{
    std::vector<uint32_t> v(n);
    for (size_t i = 0; i < n; i++)
        v[i] = rand_word(r, raw);
    return v;
}

/* A scalar argument: kind 0 random field element, 1 edge value, 2 raw word,
 * 3 the given realistic value (a root of unity, say). */
static uint32_t rand_scalar(Rng &r, int kind, uint32_t realistic)
{
    switch (kind & 3) {
    case 0: return r.below(P);
    case 1: return EDGE_FIELD[r.below(3)]; /* 0, 1, p-1 */
    case 2: return (uint32_t)r.next();
    default: return realistic;
    }
}

/* ---- launch configurations ------------------------------------------------ */

struct Cfg {
    dim3 grid, block;
    std::string name;
    bool partial; /* covers less than the whole problem (grid=program only) */
};

static int g_sms = 1;

static unsigned ceil_div(uint64_t a, uint64_t b)
{
    uint64_t q = (a + b - 1) / b;
    return (unsigned)(q ? q : 1);
}

static Cfg cfg_program(uint64_t threads, unsigned block = 64)
{
    return {dim3(ceil_div(threads, block)), dim3(block),
            "prog" + std::to_string(block), false};
}

/* What the library would pick for a grid=any kernel: 256-thread blocks, as
 * many as fit on all SMs at once, no more than the work (4 items a thread). */
static Cfg cfg_any_preferred(const void *fn, uint64_t items)
{
    int per_sm = 0;
    CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, fn, 256, 0));
    uint64_t want = ceil_div(items, 256u * 4u), cap = (uint64_t)g_sms * (per_sm ? per_sm : 1);
    return {dim3((unsigned)std::min(want, cap)), dim3(256), "any-occupancy", false};
}

/* Original configurations: the program's own and a few others.  With
 * dup_ok also a 2-D block whose second row repeats the first row's elements
 * (the originals index by x only): harmless for out-of-place kernels, a race
 * in the original for in-place ones, which therefore never get it. */
static std::vector<Cfg> orig_cfgs(uint64_t threads, bool quick, bool dup_ok = false)
{
    std::vector<Cfg> v = {cfg_program(threads, 64)};
    if (!quick) {
        v.push_back(cfg_program(threads, 256));
        v.push_back(cfg_program(threads, 96));
        v.push_back(cfg_program(threads, 1024));
        if (dup_ok)
            v.push_back({dim3(ceil_div(threads, 32)), dim3(32, 2), "prog32x2-dup", false});
    }
    return v;
}

/* Replacement configurations for a grid=any kernel. */
static std::vector<Cfg> any_cfgs(const void *fn, uint64_t threads, uint64_t items, bool quick)
{
    std::vector<Cfg> v = {cfg_program(threads, 64), cfg_any_preferred(fn, items)};
    if (!quick || items <= 4096) {
        v.push_back({dim3(7), dim3(96), "any-7x96", false});
        v.push_back({dim3(3, 2, 1), dim3(32, 2, 2), "any-3d", false});
        v.push_back({dim3(1), dim3(1024), "any-1x1024", false});
        if (items <= 4096)
            v.push_back({dim3(1), dim3(1), "any-1x1", false});
    }
    return v;
}

/* ---- one comparison ---------------------------------------------------------
 * Buffers are allocated twice (set A for the original, B for the
 * replacement) with GUARD poisoned words after each and an optional 1-word
 * offset of the pointer handed to the kernels (misaligned for 16-byte
 * access).  Inputs get the same content in both sets; outputs get POISON_A
 * in A and POISON_B in B, so a word written by one run and not the other, or
 * by neither, differs.  With `partial`, outputs get POISON_A in both (words
 * neither run covers are then expected to stay equal). */
#define GUARD 64u
#define POISON_A 0xa5a5a5a5u
#define POISON_B 0x5a5a5a5au

struct Buf {
    std::vector<uint32_t> init; /* input content; empty for a pure output */
    size_t len;
};

typedef std::function<void(uint32_t *const *p, const Cfg &c)> Launch;

static int g_failures = 0;
static long g_cases = 0;

static bool compare_case(const char *kernel, const std::string &desc, std::vector<Buf> &bufs,
                         unsigned off, const Launch &orig, const Cfg &co, const Launch &repl,
                         const Cfg &cr)
{
    const size_t nb = bufs.size();
    std::vector<uint32_t *> base_a(nb), base_b(nb), pa(nb), pb(nb);
    bool partial = co.partial || cr.partial;
    for (size_t i = 0; i < nb; i++) {
        size_t words = off + bufs[i].len + GUARD;
        std::vector<uint32_t> ha(words, POISON_A), hb(words, partial ? POISON_A : POISON_B);
        for (size_t k = 0; k < off; k++)
            ha[k] = hb[k] = POISON_A;
        for (size_t k = 0; k < words - off - bufs[i].len; k++) /* guards */
            ha[off + bufs[i].len + k] = POISON_A, hb[off + bufs[i].len + k] = POISON_B;
        if (!bufs[i].init.empty())
            for (size_t k = 0; k < bufs[i].len; k++)
                ha[off + k] = hb[off + k] = bufs[i].init[k];
        CK(cudaMalloc(&base_a[i], words * 4));
        CK(cudaMalloc(&base_b[i], words * 4));
        CK(cudaMemcpy(base_a[i], ha.data(), words * 4, cudaMemcpyHostToDevice));
        CK(cudaMemcpy(base_b[i], hb.data(), words * 4, cudaMemcpyHostToDevice));
        pa[i] = base_a[i] + off;
        pb[i] = base_b[i] + off;
    }
    orig(pa.data(), co);
    CK(cudaGetLastError());
    repl(pb.data(), cr);
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    bool ok = true;
    g_cases++;
    for (size_t i = 0; i < nb && ok; i++) {
        size_t words = off + bufs[i].len + GUARD;
        std::vector<uint32_t> ha(words), hb(words);
        CK(cudaMemcpy(ha.data(), base_a[i], words * 4, cudaMemcpyDeviceToHost));
        CK(cudaMemcpy(hb.data(), base_b[i], words * 4, cudaMemcpyDeviceToHost));
        size_t bad = 0, first = 0;
        for (size_t k = 0; k < bufs[i].len; k++)
            if (ha[off + k] != hb[off + k] && bad++ == 0)
                first = k;
        size_t guard_bad = 0;
        for (size_t k = 0; k < off; k++)
            guard_bad += ha[k] != POISON_A || hb[k] != POISON_A;
        for (size_t k = off + bufs[i].len; k < words; k++)
            guard_bad += ha[k] != POISON_A || hb[k] != POISON_B;
        if (bad || guard_bad) {
            ok = false;
            printf("MISMATCH %s [%s] orig@%s repl@%s buffer %zu: %zu of %zu words differ",
                   kernel, desc.c_str(), co.name.c_str(), cr.name.c_str(), i, bad, bufs[i].len);
            if (bad)
                printf(" (first at %zu: original %08x, replacement %08x)", first,
                       ha[off + first], hb[off + first]);
            if (guard_bad)
                printf(", %zu guard words written", guard_bad);
            printf("\n");
        }
    }
    for (size_t i = 0; i < nb; i++) {
        CK(cudaFree(base_a[i]));
        CK(cudaFree(base_b[i]));
    }
    if (!ok)
        g_failures++;
    return ok;
}

/* ---- timing ------------------------------------------------------------------ */

struct Timing {
    double orig_us, repl_us, repl_prog_us, bytes;
};

static double g_copy_gbs = 0; /* device-to-device cudaMemcpy, (read + write) / time */

static void measure_copy(bool quick)
{
    size_t words = quick ? (1u << 24) : (1u << 26);
    uint32_t *a, *b;
    CK(cudaMalloc(&a, words * 4));
    CK(cudaMalloc(&b, words * 4));
    CK(cudaMemset(a, 1, words * 4));
    double us = median_us([&] { CK(cudaMemcpy(b, a, words * 4, cudaMemcpyDeviceToDevice)); },
                          quick ? 5 : 15);
    g_copy_gbs = 2.0 * words * 4 / (us * 1e3);
    printf("memcpy D2D %zu MiB: %.1f us, %.1f GB/s (read + write)\n", words * 4 >> 20, us,
           g_copy_gbs);
    CK(cudaFree(a));
    CK(cudaFree(b));
}

static uint32_t *dev_random(Rng &r, size_t n)
{
    std::vector<uint32_t> h = rand_words(r, n, 0);
    uint32_t *d;
    CK(cudaMalloc(&d, n * 4));
    CK(cudaMemcpy(d, h.data(), n * 4, cudaMemcpyHostToDevice));
    return d;
}

/* ---- per-kernel checks --------------------------------------------------------
 * Each check_X runs the comparisons and, unless disabled, the timing, and
 * returns the timing (bytes = what the kernel must read + write once). */

struct Opts {
    bool quick, timing;
    uint64_t seed;
};

static uint32_t root_of_order(uint64_t order, int inverse) /* order a power of 2 */
{
    uint32_t lg = 0;
    while ((1ull << lg) < order)
        lg++;
    uint32_t w = bb_root_of_unity(lg);
    return inverse ? bb_inv(w) : w;
}

static void run_cmp(const char *kernel, const std::string &desc, std::vector<Buf> &bufs,
                    unsigned off, const Launch &orig, const Launch &repl,
                    const std::vector<Cfg> &ocfgs, const std::vector<Cfg> &rcfgs, bool any)
{
    if (any) {
        /* original at its program config; replacement at every config */
        for (const Cfg &cr : rcfgs)
            compare_case(kernel, desc, bufs, off, orig, ocfgs[0], repl, cr);
        for (size_t i = 1; i < ocfgs.size(); i++) /* other program configs, preferred repl */
            compare_case(kernel, desc, bufs, off, orig, ocfgs[i], repl, rcfgs[1]);
    } else {
        for (const Cfg &c : ocfgs) /* grid=program: both at the same config */
            compare_case(kernel, desc, bufs, off, orig, c, repl, c);
    }
}

#define L3(k) (k)<<<c.grid, c.block>>>

static Timing check_ntt_layer(const Opts &o, Rng &r)
{
    std::vector<std::pair<uint32_t, uint32_t>> shapes; /* (n, half) */
    for (uint32_t lg = 1; lg <= (o.quick ? 12u : 16u); lg++) {
        uint32_t n = 1u << lg;
        for (uint32_t half = 1; half < n; half <<= 1)
            if (lg <= 10 || half <= 8 || half >= n / 8 || half == 64)
                shapes.push_back({n, half});
    }
    if (!o.quick) {
        shapes.push_back({1u << 20, 1});
        shapes.push_back({1u << 20, 1u << 10});
        shapes.push_back({1u << 20, 1u << 19});
    }
    const uint32_t odd[][2] = {{24, 3}, {24, 6}, {48, 12}, {120, 20}, {6000, 1000}, {14, 1},
                               {10, 1}, {12, 2}, {20, 2}, {18, 3}, {3, 1}, {2, 1}, {70, 5}};
    for (auto &s : odd)
        shapes.push_back({s[0], s[1]});
    int idx = 0;
    for (auto &sh : shapes) {
        uint32_t n = sh.first, half = sh.second;
        int raw = idx & 1, kind = (idx / 2) % 4;
        uint32_t pow2 = (half & (half - 1)) == 0;
        uint32_t root = rand_scalar(r, kind, pow2 ? root_of_order(2ull * half, idx & 2) : 7u);
        unsigned off = (idx % 7 == 6) ? 1u : 0u;
        std::vector<Buf> bufs = {{rand_words(r, n, raw), n}};
        char desc[160];
        snprintf(desc, sizeof desc, "n=%u half=%u root=%08x %s off=%u", n, half, root,
                 raw ? "raw" : "field", off);
        Launch orig = [=](uint32_t *const *p, const Cfg &c) { L3(ntt_layer)(p[0], n, half, root); };
        Launch repl = [=](uint32_t *const *p, const Cfg &c) {
            L3(ga_ntt_layer)(p[0], n, half, root);
        };
        bool small = n <= 4096 || idx % 3 == 0;
        run_cmp("ntt_layer", desc, bufs, off, orig, repl, orig_cfgs(n / 2, o.quick || !small),
                any_cfgs((const void *)ga_ntt_layer, n / 2, n / 2, o.quick || !small), true);
        idx++;
    }
    Timing t = {0, 0, 0, 0};
    if (!o.timing)
        return t;
    /* a whole NTT's worth of layers, half = 1 .. n/2, as the prover runs them */
    const uint32_t lg = o.quick ? 22 : 24, n = 1u << lg;
    uint32_t *d = dev_random(r, n);
    Cfg prog = cfg_program(n / 2), any = cfg_any_preferred((const void *)ga_ntt_layer, n / 2);
    auto sweep = [&](int which, const Cfg &c) {
        for (uint32_t half = 1, l = 1; half < n; half <<= 1, l++) {
            uint32_t root = bb_root_of_unity(l);
            if (which == 0)
                L3(ntt_layer)(d, n, half, root);
            else
                L3(ga_ntt_layer)(d, n, half, root);
        }
    };
    int reps = o.quick ? 3 : 9;
    t.orig_us = median_us([&] { sweep(0, prog); }, reps);
    t.repl_us = median_us([&] { sweep(1, any); }, reps);
    t.repl_prog_us = median_us([&] { sweep(1, prog); }, reps);
    t.bytes = 8.0 * n * lg;
    printf("  timing: %u layers of a 2^%u NTT (program: %u x %u, replacement: %u x %u)\n", lg,
           lg, prog.grid.x, prog.block.x, any.grid.x, any.block.x);
    CK(cudaFree(d));
    return t;
}

/* Element-wise in-place kernels: scale and coset_shift. */
static Timing check_elementwise(const Opts &o, Rng &r, const char *name, bool coset)
{
    std::vector<uint32_t> sizes = {1, 2, 3, 4, 5, 7, 8, 63, 64, 65, 1000, 1001, 4096, 65539};
    if (!o.quick)
        sizes.push_back(1u << 20);
    int idx = 0;
    for (uint32_t n : sizes) {
        for (int v = 0; v < (o.quick ? 2 : 4); v++, idx++) {
            int raw = idx & 1, kind = v;
            uint32_t arg = rand_scalar(r, kind, coset ? BB_GENERATOR : bb_inv(n));
            unsigned off = v == 3 ? 1u : 0u;
            std::vector<Buf> bufs = {{rand_words(r, n, raw), n}};
            char desc[160];
            snprintf(desc, sizeof desc, "n=%u %s=%08x %s off=%u", n, coset ? "shift" : "factor",
                     arg, raw ? "raw" : "field", off);
            Launch orig = [=](uint32_t *const *p, const Cfg &c) {
                if (coset)
                    L3(coset_shift)(p[0], n, arg);
                else
                    L3(scale)(p[0], n, arg);
            };
            Launch repl = [=](uint32_t *const *p, const Cfg &c) {
                if (coset)
                    L3(ga_coset_shift)(p[0], n, arg);
                else
                    L3(ga_scale)(p[0], n, arg);
            };
            const void *fn = coset ? (const void *)ga_coset_shift : (const void *)ga_scale;
            bool small = n <= 4096 || v == 0;
            run_cmp(name, desc, bufs, off, orig, repl, orig_cfgs(n, o.quick || !small),
                    any_cfgs(fn, n, n, o.quick || !small), true);
        }
    }
    Timing t = {0, 0, 0, 0};
    if (!o.timing)
        return t;
    const uint32_t n = o.quick ? (1u << 22) : (1u << 24);
    uint32_t *d = dev_random(r, n);
    const void *fn = coset ? (const void *)ga_coset_shift : (const void *)ga_scale;
    Cfg prog = cfg_program(n), any = cfg_any_preferred(fn, n);
    uint32_t arg = coset ? BB_GENERATOR : bb_inv(n);
    auto go = [&](int which, const Cfg &c) {
        if (coset) {
            if (which == 0)
                L3(coset_shift)(d, n, arg);
            else
                L3(ga_coset_shift)(d, n, arg);
        } else {
            if (which == 0)
                L3(scale)(d, n, arg);
            else
                L3(ga_scale)(d, n, arg);
        }
    };
    int reps = o.quick ? 5 : 15;
    t.orig_us = median_us([&] { go(0, prog); }, reps);
    t.repl_us = median_us([&] { go(1, any); }, reps);
    t.repl_prog_us = median_us([&] { go(1, prog); }, reps);
    t.bytes = 8.0 * n;
    printf("  timing: n = 2^%d\n", o.quick ? 22 : 24);
    CK(cudaFree(d));
    return t;
}

static Timing check_bit_reverse(const Opts &o, Rng &r)
{
    int idx = 0;
    for (uint32_t lg = 0; lg <= (o.quick ? 14u : 20u); lg++, idx++) {
        if (o.quick && lg > 12 && lg != 14)
            continue;
        uint32_t n = 1u << lg;
        unsigned off = idx % 4 == 3 ? 1u : 0u;
        int raw = idx & 1;
        std::vector<Buf> bufs = {{rand_words(r, n, raw), n}};
        char desc[160];
        snprintf(desc, sizeof desc, "n=2^%u %s off=%u", lg, raw ? "raw" : "field", off);
        Launch orig = [=](uint32_t *const *p, const Cfg &c) { L3(bit_reverse)(p[0], n, lg); };
        Launch repl = [=](uint32_t *const *p, const Cfg &c) {
            L3(ga_bit_reverse)(p[0], n, lg);
        };
        bool small = lg <= 12;
        run_cmp("bit_reverse", desc, bufs, off, orig, repl, orig_cfgs(n, o.quick || !small),
                any_cfgs((const void *)ga_bit_reverse, n, n / 4, o.quick || !small), true);
    }
    Timing t = {0, 0, 0, 0};
    if (!o.timing)
        return t;
    const uint32_t lg = o.quick ? 22 : 24, n = 1u << lg;
    uint32_t *d = dev_random(r, n);
    Cfg prog = cfg_program(n);
    Cfg any = cfg_any_preferred((const void *)ga_bit_reverse, n / 4);
    int reps = o.quick ? 5 : 15;
    t.orig_us = median_us([&] { bit_reverse<<<prog.grid, prog.block>>>(d, n, lg); }, reps);
    t.repl_us = median_us([&] { ga_bit_reverse<<<any.grid, any.block>>>(d, n, lg); }, reps);
    t.repl_prog_us =
        median_us([&] { ga_bit_reverse<<<prog.grid, prog.block>>>(d, n, lg); }, reps);
    t.bytes = 8.0 * n;
    printf("  timing: n = 2^%u\n", lg);
    CK(cudaFree(d));
    return t;
}

/* grid=program kernels also get partial grids (fewer threads than rows). */
static std::vector<Cfg> program_cfgs(uint64_t threads, bool quick)
{
    std::vector<Cfg> v = orig_cfgs(threads, quick, true);
    if (!quick && threads > 64)
        v.push_back({dim3(ceil_div(threads, 64) / 2), dim3(64), "prog64-half-grid", true});
    return v;
}

static Timing check_hash_leaves(const Opts &o, Rng &r)
{
    const uint32_t shapes[][3] = {{1, 1, 1},       {7, 2, 7},       {64, 8, 64},
                                  {100, 3, 100},   {1000, 8, 1000}, {1000, 9, 1003},
                                  {333, 16, 333},  {257, 17, 300},  {5, 0, 5},
                                  {16384, 8, 16384}, {65536, 2, 65536}, {4099, 24, 4099}};
    int idx = 0;
    for (auto &sh : shapes) {
        for (int v = 0; v < (o.quick ? 1 : 2); v++, idx++) {
            uint32_t rows = sh[0], width = sh[1], stride = sh[2];
            if (o.quick && rows > 16384)
                continue;
            size_t len = width ? (size_t)(width - 1) * stride + rows : 1;
            int raw = idx & 1;
            unsigned off = idx % 3 == 2 ? 1u : 0u;
            std::vector<Buf> bufs = {{rand_words(r, len, raw), len}, {{}, (size_t)rows * 8}};
            char desc[160];
            snprintf(desc, sizeof desc, "rows=%u width=%u stride=%u %s off=%u", rows, width,
                     stride, raw ? "raw" : "field", off);
            Launch orig = [=](uint32_t *const *p, const Cfg &c) {
                L3(hash_leaves)(p[0], p[1], rows, width, stride);
            };
            Launch repl = [=](uint32_t *const *p, const Cfg &c) {
                L3(ga_hash_leaves)(p[0], p[1], rows, width, stride);
            };
            run_cmp("hash_leaves", desc, bufs, off, orig, repl,
                    program_cfgs(rows, o.quick || rows > 4096), {}, false);
        }
    }
    Timing t = {0, 0, 0, 0};
    if (!o.timing)
        return t;
    /* the prover's main tree: N rows of W = 8 columns, column-major */
    const uint32_t rows = o.quick ? (1u << 19) : (1u << 21), width = 8;
    uint32_t *d = dev_random(r, (size_t)rows * width), *out;
    CK(cudaMalloc(&out, (size_t)rows * 32));
    Cfg prog = cfg_program(rows);
    int reps = o.quick ? 3 : 9;
    t.orig_us = median_us(
        [&] { hash_leaves<<<prog.grid, prog.block>>>(d, out, rows, width, rows); }, reps);
    t.repl_us = median_us(
        [&] { ga_hash_leaves<<<prog.grid, prog.block>>>(d, out, rows, width, rows); }, reps);
    t.repl_prog_us = t.repl_us;
    t.bytes = (double)rows * width * 4 + (double)rows * 32;
    printf("  timing: %u rows x %u columns\n", rows, width);
    CK(cudaFree(d));
    CK(cudaFree(out));
    return t;
}

static Timing check_hash_nodes(const Opts &o, Rng &r)
{
    std::vector<uint32_t> counts = {1, 2, 3, 64, 100, 1000, 16384};
    if (!o.quick)
        counts.push_back(1u << 18);
    int idx = 0;
    for (uint32_t count : counts) {
        for (int v = 0; v < (o.quick ? 1 : 3); v++, idx++) {
            int raw = idx & 1;
            unsigned off = v == 2 ? 1u : 0u;
            std::vector<Buf> bufs = {{rand_words(r, (size_t)count * 16, raw), (size_t)count * 16},
                                     {{}, (size_t)count * 8}};
            char desc[160];
            snprintf(desc, sizeof desc, "count=%u %s off=%u", count, raw ? "raw" : "field", off);
            Launch orig = [=](uint32_t *const *p, const Cfg &c) {
                L3(hash_nodes)(p[0], p[1], count);
            };
            Launch repl = [=](uint32_t *const *p, const Cfg &c) {
                L3(ga_hash_nodes)(p[0], p[1], count);
            };
            run_cmp("hash_nodes", desc, bufs, off, orig, repl,
                    program_cfgs(count, o.quick || count > 16384), {}, false);
        }
    }
    Timing t = {0, 0, 0, 0};
    if (!o.timing)
        return t;
    const uint32_t count = o.quick ? (1u << 19) : (1u << 21);
    uint32_t *d = dev_random(r, (size_t)count * 16), *out;
    CK(cudaMalloc(&out, (size_t)count * 32));
    Cfg prog = cfg_program(count);
    int reps = o.quick ? 3 : 9;
    t.orig_us = median_us([&] { hash_nodes<<<prog.grid, prog.block>>>(d, out, count); }, reps);
    t.repl_us = median_us([&] { ga_hash_nodes<<<prog.grid, prog.block>>>(d, out, count); }, reps);
    t.repl_prog_us = t.repl_us;
    t.bytes = (double)count * 64 + (double)count * 32;
    printf("  timing: %u nodes\n", count);
    CK(cudaFree(d));
    CK(cudaFree(out));
    return t;
}

static Timing check_combine_columns(const Opts &o, Rng &r)
{
    const uint32_t shapes[][2] = {{1, 1},   {3, 2},    {4, 1},    {5, 3},     {64, 8},
                                  {10, 0},  {1000, 5}, {1001, 8}, {4096, 9},  {4100, 64},
                                  {65536, 8}, {262144, 3}};
    int idx = 0;
    for (auto &sh : shapes) {
        for (int v = 0; v < (o.quick ? 2 : 4); v++, idx++) {
            uint32_t n = sh[0], cols = sh[1];
            int raw = idx & 1;
            uint32_t alpha = rand_scalar(r, v, r.below(P));
            unsigned off = v == 3 ? 1u : 0u;
            size_t len = (size_t)n * cols;
            std::vector<Buf> bufs = {{rand_words(r, len ? len : 1, raw), len ? len : 1},
                                     {{}, n}};
            char desc[160];
            snprintf(desc, sizeof desc, "n=%u cols=%u alpha=%08x %s off=%u", n, cols, alpha,
                     raw ? "raw" : "field", off);
            Launch orig = [=](uint32_t *const *p, const Cfg &c) {
                L3(combine_columns)(p[0], p[1], n, cols, alpha);
            };
            Launch repl = [=](uint32_t *const *p, const Cfg &c) {
                L3(ga_combine_columns)(p[0], p[1], n, cols, alpha);
            };
            bool small = n <= 4100 || v == 0;
            run_cmp("combine_columns", desc, bufs, off, orig, repl,
                    orig_cfgs(n, o.quick || !small, true),
                    any_cfgs((const void *)ga_combine_columns, n, n, o.quick || !small), true);
        }
    }
    Timing t = {0, 0, 0, 0};
    if (!o.timing)
        return t;
    const uint32_t n = o.quick ? (1u << 20) : (1u << 22), cols = 8;
    uint32_t *d = dev_random(r, (size_t)n * cols), *out;
    CK(cudaMalloc(&out, (size_t)n * 4));
    Cfg prog = cfg_program(n), any = cfg_any_preferred((const void *)ga_combine_columns, n);
    uint32_t alpha = 123456789u;
    int reps = o.quick ? 5 : 15;
    t.orig_us = median_us(
        [&] { combine_columns<<<prog.grid, prog.block>>>(d, out, n, cols, alpha); }, reps);
    t.repl_us = median_us(
        [&] { ga_combine_columns<<<any.grid, any.block>>>(d, out, n, cols, alpha); }, reps);
    t.repl_prog_us = median_us(
        [&] { ga_combine_columns<<<prog.grid, prog.block>>>(d, out, n, cols, alpha); }, reps);
    t.bytes = (double)n * cols * 4 + (double)n * 4;
    printf("  timing: n = %u, %u columns\n", n, cols);
    CK(cudaFree(d));
    CK(cudaFree(out));
    return t;
}

static Timing check_fri_fold(const Opts &o, Rng &r)
{
    std::vector<uint32_t> halves = {1, 2, 3, 4, 5, 64, 1000, 1001, 4096, 65536};
    if (!o.quick)
        halves.push_back(1u << 20);
    int idx = 0;
    for (uint32_t half : halves) {
        for (int v = 0; v < (o.quick ? 2 : 5); v++, idx++) {
            int raw = idx & 1;
            uint32_t pow2 = (half & (half - 1)) == 0;
            uint32_t beta = rand_scalar(r, v, r.below(P));
            uint32_t shift_inv = rand_scalar(r, v + 1, bb_inv(BB_GENERATOR));
            uint32_t omega_inv = rand_scalar(r, v + 3, pow2 ? root_of_order(2ull * half, 1) : 5u);
            unsigned off = v == 3 ? 1u : 0u;
            bool alias = v == 4; /* out == in, which the original handles race-free */
            std::vector<Buf> bufs = {{rand_words(r, 2ull * half, raw), 2ull * half}};
            if (!alias)
                bufs.push_back({{}, half});
            char desc[200];
            snprintf(desc, sizeof desc,
                     "half=%u beta=%08x shift_inv=%08x omega_inv=%08x %s off=%u%s", half, beta,
                     shift_inv, omega_inv, raw ? "raw" : "field", off, alias ? " out=in" : "");
            Launch orig = [=](uint32_t *const *p, const Cfg &c) {
                L3(fri_fold)(p[0], alias ? p[0] : p[1], half, beta, shift_inv, omega_inv);
            };
            Launch repl = [=](uint32_t *const *p, const Cfg &c) {
                L3(ga_fri_fold)(p[0], alias ? p[0] : p[1], half, beta, shift_inv, omega_inv);
            };
            bool small = half <= 4096 || v == 0;
            run_cmp("fri_fold", desc, bufs, off, orig, repl,
                    orig_cfgs(half, o.quick || !small, !alias),
                    any_cfgs((const void *)ga_fri_fold, half, half, o.quick || !small), true);
        }
    }
    Timing t = {0, 0, 0, 0};
    if (!o.timing)
        return t;
    const uint32_t half = o.quick ? (1u << 21) : (1u << 23);
    uint32_t *d = dev_random(r, 2ull * half), *out;
    CK(cudaMalloc(&out, (size_t)half * 4));
    Cfg prog = cfg_program(half), any = cfg_any_preferred((const void *)ga_fri_fold, half);
    uint32_t beta = 987654321u, si = bb_inv(BB_GENERATOR), oi = root_of_order(2ull * half, 1);
    int reps = o.quick ? 5 : 15;
    t.orig_us = median_us(
        [&] { fri_fold<<<prog.grid, prog.block>>>(d, out, half, beta, si, oi); }, reps);
    t.repl_us = median_us(
        [&] { ga_fri_fold<<<any.grid, any.block>>>(d, out, half, beta, si, oi); }, reps);
    t.repl_prog_us = median_us(
        [&] { ga_fri_fold<<<prog.grid, prog.block>>>(d, out, half, beta, si, oi); }, reps);
    t.bytes = (double)half * 12;
    printf("  timing: half = %u\n", half);
    CK(cudaFree(d));
    CK(cudaFree(out));
    return t;
}

/* ---- main --------------------------------------------------------------------- */

struct Entry {
    const char *name;
    std::function<Timing(const Opts &, Rng &)> fn;
};

int main(int argc, char **argv)
{
    Opts o = {false, true, 0};
    const char *only = NULL;
    bool seeded = false;
    for (int a = 1; a < argc; a++) {
        if (!strcmp(argv[a], "--quick"))
            o.quick = true;
        else if (!strcmp(argv[a], "--no-timing"))
            o.timing = false;
        else if (!strcmp(argv[a], "--kernel") && a + 1 < argc)
            only = argv[++a];
        else if (!strncmp(argv[a], "--kernel=", 9))
            only = argv[a] + 9;
        else if (!strcmp(argv[a], "--seed") && a + 1 < argc) {
            o.seed = strtoull(argv[++a], NULL, 0);
            seeded = true;
        } else if (!strcmp(argv[a], "--help") || !strcmp(argv[a], "-h")) {
            printf("usage: verify [--kernel NAME] [--quick] [--seed S] [--no-timing]\n"
                   "exit: 0 all identical, 1 mismatch or CUDA error, 2 bad option, 77 no GPU\n");
            return 0;
        } else {
            fprintf(stderr, "verify: unknown option '%s' (see --help)\n", argv[a]);
            return 2;
        }
    }
    if (only && !strncmp(only, "ga_", 3))
        only += 3;

    static const Entry entries[] = {
        {"ntt_layer", check_ntt_layer},
        {"coset_shift", [](const Opts &op, Rng &r) { return check_elementwise(op, r, "coset_shift", true); }},
        {"scale", [](const Opts &op, Rng &r) { return check_elementwise(op, r, "scale", false); }},
        {"bit_reverse", check_bit_reverse},
        {"hash_leaves", check_hash_leaves},
        {"hash_nodes", check_hash_nodes},
        {"combine_columns", check_combine_columns},
        {"fri_fold", check_fri_fold},
    };
    bool known = !only;
    for (const Entry &e : entries)
        known = known || !strcmp(e.name, only);
    if (!known) {
        fprintf(stderr, "verify: --kernel: unknown kernel '%s'; one of:", only);
        for (const Entry &e : entries)
            fprintf(stderr, " %s", e.name);
        fprintf(stderr, "\n");
        return 2;
    }

    int devices = 0;
    if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
        printf("SKIP: no CUDA device\n");
        return 77;
    }
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    g_sms = prop.multiProcessorCount;
    if (!seeded)
        o.seed = mix64((uint64_t)time(NULL) ^ ((uint64_t)clock() << 32));
    printf("verify: device %s (sm_%d%d, %d SMs), seed 0x%016" PRIx64 "%s\n", prop.name,
           prop.major, prop.minor, g_sms, o.seed, o.quick ? ", quick" : "");
    if (o.timing)
        measure_copy(o.quick);

    std::vector<std::string> summary;
    int k = 0;
    for (const Entry &e : entries) {
        k++;
        if (only && strcmp(e.name, only))
            continue;
        Rng r(mix64(o.seed + (uint64_t)k * 0x632BE59BD9B4E019ull));
        int fail0 = g_failures;
        long cases0 = g_cases;
        printf("%s:\n", e.name);
        Timing t = e.fn(o, r);
        bool ok = g_failures == fail0;
        printf("  %ld comparisons, %s\n", g_cases - cases0, ok ? "all identical" : "MISMATCH");
        char line[256];
        if (o.timing) {
            double gbs = t.bytes / (t.repl_us * 1e3), pct = 100.0 * gbs / g_copy_gbs;
            printf("  original %.1f us, replacement %.1f us (%.1f us at the program's grid), "
                   "speedup %.2fx, %.1f GB/s = %.0f%% of memcpy\n",
                   t.orig_us, t.repl_us, t.repl_prog_us, t.orig_us / t.repl_us, gbs, pct);
            snprintf(line, sizeof line, "verify %s %s speedup=%.2f bw_pct=%.0f", e.name,
                     ok ? "ok" : "MISMATCH", t.orig_us / t.repl_us, pct);
        } else {
            snprintf(line, sizeof line, "verify %s %s", e.name, ok ? "ok" : "MISMATCH");
        }
        summary.push_back(line);
    }
    for (const std::string &s : summary)
        printf("%s\n", s.c_str());
    printf("%ld comparisons, %d mismatched\n", g_cases, g_failures);
    return g_failures ? 1 : 0;
}
