// sppark_ntt.cu - corpus driver for supranational/sppark's NTT over Goldilocks,
// built from the carried sppark tree (ntt/ntt.cuh, util/all_gpus.cpp).
//
// Called the way sppark's own callers call it:
//   poc/ntt-cuda/cuda/ntt_api.cu   compute_ntt(): select_gpu(id), NTT::Base(gpu, inout, ...)
//   poc/ntt-cuda/src/lib.rs        NTT / iNTT / coset_NTT / coset_iNTT on host slices
//   poc/ntt-cuda/tests/ntt.rs      gl64_self_consistency: NN vs RR, round trips NN, RR, NR->RN
//   ntt/ntt.cuh                    NTT::LDE (LDE_aux: iNTT NR, cooperative spread, NTT RN)
// Every call is a whole host-slice transform: cudaMallocAsync on the GPU's stream
// (dev_ptr_t), an async copy in, the kernels, an async copy out, a stream sync,
// cudaFreeAsync (util/gpu_t.cuh).
//
// Checks against a CPU reference: the transforms at sample points (a direct sum
// with the roots from ntt/parameters/goldilocks.h), every round trip exact, the
// LDE at sample points of the shifted, extended domain.
//
// phase_ms: the time inside sppark's calls (NTT::Base, NTT::LDE) for the columns
// after the first (the first is a warm-up: GPU selection, context, kernels
// loaded); the host-side preparation and the CPU reference stay outside.
//
// usage: sppark [LOG2_DOMAIN 16..22 (20)] [COLUMNS (4)]
#include <ff/goldilocks.hpp>
#include <ntt/ntt.cuh>

#include <vector>

#include "../common/corpus.h"

static const uint64_t P = 0xffffffff00000001ULL;

static uint64_t gl_add(uint64_t a, uint64_t b)
{
    uint64_t s = a + b;
    if (s < a || s >= P)
        s -= P;
    return s;
}

static uint64_t gl_reduce128(unsigned __int128 x)
{
    uint64_t lo = (uint64_t)x, hi = (uint64_t)(x >> 64);
    uint64_t hi_hi = hi >> 32, hi_lo = hi & 0xffffffffULL;
    uint64_t t0 = lo - hi_hi;
    if (lo < hi_hi)
        t0 -= 0xffffffffULL;
    uint64_t t1 = hi_lo * 0xffffffffULL;
    uint64_t t2 = t0 + t1;
    if (t2 < t1)
        t2 += 0xffffffffULL;
    return t2 >= P ? t2 - P : t2;
}

static uint64_t gl_mul(uint64_t a, uint64_t b) { return gl_reduce128((unsigned __int128)a * b); }

static uint64_t gl_pow(uint64_t x, uint64_t e)
{
    uint64_t r = 1;
    for (; e; e >>= 1, x = gl_mul(x, x))
        if (e & 1)
            r = gl_mul(r, x);
    return r;
}

// The host copies of sppark's own constants (their bytes are the canonical values).
static uint64_t host_val(const fr_t &f)
{
    uint64_t v;
    memcpy(&v, &f, sizeof v);
    return v;
}

// sum_j c[j] * x^j (Horner).
static uint64_t horner(const std::vector<uint64_t> &c, uint64_t x)
{
    uint64_t acc = 0;
    for (size_t j = c.size(); j-- > 0;)
        acc = gl_add(gl_mul(acc, x), c[j]);
    return acc;
}

static size_t bitrev(size_t i, int bits)
{
    size_t r = 0;
    for (int b = 0; b < bits; b++)
        r |= ((i >> b) & 1) << (bits - 1 - b);
    return r;
}

static Phase phase;
static bool timed = false; // the columns after the first

// poc/ntt-cuda/cuda/ntt_api.cu compute_ntt(), with the error surfaced.
static void compute_ntt(std::vector<uint64_t> &inout, uint32_t lg, NTT::InputOutputOrder order,
                        NTT::Direction dir, NTT::Type type, const char *what)
{
    if (timed)
        phase.begin();
    auto &gpu = select_gpu(0);
    RustError e = NTT::Base(gpu, (fr_t *)inout.data(), lg, order, dir, type);
    if (timed)
        phase.end();
    if (e.code) {
        fprintf(stderr, "error: NTT::Base (%s): %s\n", what,
                e.message ? e.message : cudaGetErrorString((cudaError_t)e.code));
        exit(2);
    }
}

int main(int argc, char **argv)
{
    const int lg = arg_log(argc, argv, 1, 20, 16, 22);
    const int columns = arg_log(argc, argv, 2, 4, 1, 64);
    const int lg_blowup = 2;
    const size_t n = (size_t)1 << lg, big = n << lg_blowup;
    printf("sppark ntt goldilocks: 2^%d x %d columns, LDE blowup %d\n", lg, columns,
           1 << lg_blowup);
    fflush(stdout);

    // The CPU reference's own arithmetic, on values where % is the answer.
    {
        Rng t(7);
        for (int i = 0; i < 4096; i++) {
            uint64_t a = t.next() % P, b = t.next() % P;
            if (gl_mul(a, b) != (uint64_t)(((unsigned __int128)a * b) % P)) {
                fprintf(stderr, "error: host Goldilocks arithmetic is wrong\n");
                return 2;
            }
        }
    }

    Digest dg;
    Checks ck;
    Rng rng(0x5ba9c0de);
    try {
        const uint64_t w = host_val(forward_roots_of_unity[lg]);
        const uint64_t wbig = host_val(forward_roots_of_unity[lg + lg_blowup]);
        const uint64_t g = host_val(group_gen);
        ck.expect(gl_pow(w, n / 2) == P - 1, "root of unity of order 2^%d", lg);
        ck.expect(gl_pow(wbig, big / 2) == P - 1, "root of unity of order 2^%d",
                  lg + lg_blowup);

        for (int c = 0; c < columns; c++) {
            timed = c > 0 || columns == 1;
            std::vector<uint64_t> v(n);
            for (auto &x : v)
                x = rng.next() % P;
            std::vector<size_t> ks = {0, 1, n - 1, rng.below((uint32_t)n), rng.below((uint32_t)n)};

            // gl64_self_consistency: NN and RR agree, both come back.
            std::vector<uint64_t> t1 = v, t2 = v;
            compute_ntt(t1, lg, NTT::InputOutputOrder::NN, NTT::Direction::forward,
                        NTT::Type::standard, "NTT NN");
            compute_ntt(t2, lg, NTT::InputOutputOrder::RR, NTT::Direction::forward,
                        NTT::Type::standard, "NTT RR");
            dg.add(t1.data(), n * 8);
            dg.add(t2.data(), n * 8);
            ck.expect(t1 == t2, "column %d: NTT NN != NTT RR", c);
            std::vector<uint64_t> X(ks.size());
            for (size_t i = 0; i < ks.size(); i++) {
                X[i] = horner(v, gl_pow(w, ks[i]));
                ck.expect(t1[ks[i]] == X[i], "column %d: NTT[%zu] differs from the direct sum", c,
                          ks[i]);
            }
            compute_ntt(t1, lg, NTT::InputOutputOrder::NN, NTT::Direction::inverse,
                        NTT::Type::standard, "iNTT NN");
            compute_ntt(t2, lg, NTT::InputOutputOrder::RR, NTT::Direction::inverse,
                        NTT::Type::standard, "iNTT RR");
            ck.expect(t1 == v, "column %d: iNTT NN(NTT NN(v)) != v", c);
            ck.expect(t2 == v, "column %d: iNTT RR(NTT RR(v)) != v", c);

            // NR then RN.
            compute_ntt(t1, lg, NTT::InputOutputOrder::NR, NTT::Direction::forward,
                        NTT::Type::standard, "NTT NR");
            dg.add(t1.data(), n * 8);
            for (size_t i = 0; i < ks.size(); i++)
                ck.expect(t1[bitrev(ks[i], lg)] == X[i], "column %d: NTT NR[%zu] differs", c,
                          ks[i]);
            compute_ntt(t1, lg, NTT::InputOutputOrder::RN, NTT::Direction::inverse,
                        NTT::Type::standard, "iNTT RN");
            ck.expect(t1 == v, "column %d: iNTT RN(NTT NR(v)) != v", c);

            // coset_NTT / coset_iNTT: evaluations at g * w^k.
            std::vector<uint64_t> t3 = v;
            compute_ntt(t3, lg, NTT::InputOutputOrder::NN, NTT::Direction::forward,
                        NTT::Type::coset, "coset NTT NN");
            dg.add(t3.data(), n * 8);
            for (size_t i = 0; i < 3; i++)
                ck.expect(t3[ks[i + 2]] == horner(v, gl_mul(g, gl_pow(w, ks[i + 2]))),
                          "column %d: coset NTT[%zu] differs", c, ks[i + 2]);
            compute_ntt(t3, lg, NTT::InputOutputOrder::NN, NTT::Direction::inverse,
                        NTT::Type::coset, "coset iNTT NN");
            ck.expect(t3 == v, "column %d: coset round trip != v", c);

            // Coefficients of the interpolant, then the LDE of the same values.
            std::vector<uint64_t> coef = v;
            compute_ntt(coef, lg, NTT::InputOutputOrder::NN, NTT::Direction::inverse,
                        NTT::Type::standard, "iNTT NN");
            dg.add(coef.data(), n * 8);
            for (size_t i = 0; i < 2; i++)
                ck.expect(horner(coef, gl_pow(w, ks[i + 3])) == v[ks[i + 3]],
                          "column %d: interpolant at w^%zu != v", c, ks[i + 3]);

            std::vector<uint64_t> ext(big);
            memcpy(ext.data(), v.data(), n * 8);
            if (timed)
                phase.begin();
            RustError e = NTT::LDE(select_gpu(0), (fr_t *)ext.data(), lg, lg_blowup);
            if (timed)
                phase.end();
            if (e.code) {
                fprintf(stderr, "error: NTT::LDE: %s\n",
                        e.message ? e.message : cudaGetErrorString((cudaError_t)e.code));
                return 2;
            }
            dg.add(ext.data(), big * 8);
            size_t kb[3] = {0, big - 1, (size_t)rng.below((uint32_t)big)};
            for (size_t k : kb)
                ck.expect(ext[k] == horner(coef, gl_mul(g, gl_pow(wbig, k))),
                          "column %d: LDE[%zu] differs from the interpolant at g*w^%zu", c, k, k);
        }
    } catch (const cuda_error &e) {
        fprintf(stderr, "error: %s\n", e.what());
        return 2;
    }
    phase.print();
    return finish(dg, ck);
}
