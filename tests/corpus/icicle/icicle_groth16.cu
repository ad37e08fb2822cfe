// icicle_groth16.cu - corpus driver for ICICLE v2 (ingonyama-zk/icicle, tag v2.8.0;
// its CUDA backend was open source up to v2), built from the carried icicle/src
// (msm, ntt, vec_ops) and icicle/include. It runs Groth16 proofs over bn254 the
// way a Groth16 prover drives ICICLE, through ICICLE's own C++ API (api/bn254.h):
//   gnark's ICICLE v2 prover (backend/groth16/bn254/icicle/icicle.go, the v2-era
//   wrappers, as in celer-network/gnark):
//     setupDevicePointers  InitDomain(root of order 2n, fast twiddles off); the
//                          proving key's G1 A, B, K, Z and G2 B points on the device
//     Prove                a stream created per proof; computeHonDevice: a, b, c
//                          copied in from host memory (cudaMallocAsync and an
//                          async copy from the pageable slice), iNTT (kNM) of each,
//                          coset NTT (kMN, coset generator the root of order 2n) of
//                          each, VecOp mul and sub (synchronous: the default
//                          VecOpsConfig), den repeated n times copied in from the
//                          host, VecOp mul, coset iNTT (kNR); then the MSMs, each
//                          async with its result read back by an async copy into
//                          host memory: B in G1 and in G2 on the wires copied to
//                          the device, A on a stream of its own with the wires
//                          left on the host (ICICLE copies them in), Z on h (on the
//                          device), K on the private wires from the host
//   examples/c++/msm/example.cu, examples/c++/ntt/example.cu  the API calls
//                          (default_msm_config, default_ntt_config, bn254_msm_cuda,
//                          bn254_g2_msm_cuda, bn254_initialize_domain, bn254_ntt_cuda)
// ICICLE itself (src/msm/msm.cu, src/ntt/ntt.cu, src/vec_ops/vec_ops.cu) then does
// what it always does: ~20 cudaMallocAsync/cudaFreeAsync per MSM, a stream created
// per MSM for its bucket reduction, 4-byte reads of counts into host variables,
// a kernel on the legacy default stream, a stream sync at the end of synchronous
// calls. The driver changes none of it.
//
// The witness is random (a, b, the wires) with c = a*b at each domain point, so
// a*b - c vanishes on the domain and h is a polynomial. The proving key's points
// are k*G for random k (made on the GPU at set-up by a kernel of this driver), so
// every MSM has a known answer: (sum s_i k_i)*G.
//
// Checks on the CPU (last proof, after the timed phase): each MSM against
// (sum s_i k_i)*G in G1 and G2 (the sums in an arithmetic of this driver, the
// scalar multiplication in ICICLE's host code), h's top coefficient zero, and
// A(x)B(x) - C(x) = h(x)(x^n - 1) at a random x, with A, B, C the interpolants of
// a, b, c on the domain (barycentric form) and h read back from the device.
// Prints the proving time of the proofs after the first (warm-up), each started
// and ended synchronized, as `phase_ms:`.
//
// usage: icicle [LOG2_DOMAIN 10..22 (20)] [PROOFS 2..16 (4)]
#include "api/bn254.h"

#include <utility>
#include <vector>

#include "../common/corpus.h"

using namespace bn254;

// ---- The scalar field in 4 x 64-bit Montgomery form, for the CPU reference ----
namespace ref {
static const uint64_t M[4] = {0x43e1f593f0000001ULL, 0x2833e84879b97091ULL,
                              0xb85045b68181585dULL, 0x30644e72e131a029ULL};
typedef unsigned __int128 u128;
struct Fr {
    uint64_t v[4];
    bool operator==(const Fr &o) const { return !memcmp(v, o.v, sizeof v); }
    bool operator!=(const Fr &o) const { return !(*this == o); }
};
static uint64_t INV; // -M^-1 mod 2^64
static Fr R2;        // 2^512 mod M

static bool ge_m(const uint64_t a[4])
{
    for (int i = 3; i >= 0; i--)
        if (a[i] != M[i])
            return a[i] > M[i];
    return true;
}
static void sub_m(uint64_t a[4])
{
    u128 borrow = 0;
    for (int i = 0; i < 4; i++) {
        u128 d = (u128)a[i] - M[i] - borrow;
        a[i] = (uint64_t)d;
        borrow = (d >> 64) ? 1 : 0;
    }
}
static Fr add(const Fr &a, const Fr &b) // a, b < M < 2^254: no carry out
{
    Fr r;
    u128 c = 0;
    for (int i = 0; i < 4; i++) {
        c += (u128)a.v[i] + b.v[i];
        r.v[i] = (uint64_t)c;
        c >>= 64;
    }
    if (ge_m(r.v))
        sub_m(r.v);
    return r;
}
static Fr sub(const Fr &a, const Fr &b)
{
    Fr r;
    u128 borrow = 0;
    for (int i = 0; i < 4; i++) {
        u128 d = (u128)a.v[i] - b.v[i] - borrow;
        r.v[i] = (uint64_t)d;
        borrow = (d >> 64) ? 1 : 0;
    }
    if (borrow) {
        u128 c = 0;
        for (int i = 0; i < 4; i++) {
            c += (u128)r.v[i] + M[i];
            r.v[i] = (uint64_t)c;
            c >>= 64;
        }
    }
    return r;
}
// a * b / 2^256 mod M (CIOS).
static Fr mul(const Fr &a, const Fr &b)
{
    uint64_t t[6] = {0, 0, 0, 0, 0, 0};
    for (int i = 0; i < 4; i++) {
        u128 c = 0;
        for (int j = 0; j < 4; j++) {
            c += (u128)a.v[j] * b.v[i] + t[j];
            t[j] = (uint64_t)c;
            c >>= 64;
        }
        c += t[4];
        t[4] = (uint64_t)c;
        t[5] = (uint64_t)(c >> 64);
        uint64_t m = t[0] * INV;
        c = (u128)m * M[0] + t[0];
        c >>= 64;
        for (int j = 1; j < 4; j++) {
            c += (u128)m * M[j] + t[j];
            t[j - 1] = (uint64_t)c;
            c >>= 64;
        }
        c += t[4];
        t[3] = (uint64_t)c;
        t[4] = t[5] + (uint64_t)(c >> 64);
    }
    Fr r = {{t[0], t[1], t[2], t[3]}};
    if (t[4] || ge_m(r.v))
        sub_m(r.v);
    return r;
}
static void init()
{
    uint64_t x = 1;
    for (int i = 0; i < 6; i++)
        x *= 2 - M[0] * x;
    INV = (uint64_t)0 - x;
    Fr r = {{1, 0, 0, 0}};
    for (int i = 0; i < 512; i++)
        r = add(r, r);
    R2 = r;
}
// Canonical integers (ICICLE's storage: little-endian 32-bit limbs) in and out.
static Fr from_std(const scalar_t &s)
{
    Fr a;
    memcpy(a.v, s.limbs_storage.limbs, 32);
    return mul(a, R2);
}
static scalar_t to_std(const Fr &a)
{
    Fr one = {{1, 0, 0, 0}};
    Fr c = mul(a, one);
    scalar_t s;
    memcpy(s.limbs_storage.limbs, c.v, 32);
    return s;
}
static Fr one() { return mul(Fr{{1, 0, 0, 0}}, R2); }
static Fr pow(Fr x, uint64_t e)
{
    Fr r = one();
    for (; e; e >>= 1, x = mul(x, x))
        if (e & 1)
            r = mul(r, x);
    return r;
}
static Fr inverse(const Fr &x) // x^(M-2)
{
    uint64_t e[4] = {M[0] - 2, M[1], M[2], M[3]};
    Fr r = one(), b = x;
    for (int i = 0; i < 4; i++)
        for (int k = 0; k < 64; k++) {
            if ((e[i] >> k) & 1)
                r = mul(r, b);
            b = mul(b, b);
        }
    return r;
}
} // namespace ref

// A random canonical scalar below 2^253 (< the modulus), never zero.
static scalar_t rand_scalar(Rng &rng)
{
    scalar_t s;
    uint64_t w[4] = {rng.next(), rng.next(), rng.next(), rng.next() & 0x1fffffffffffffffULL};
    w[0] |= 1;
    memcpy(s.limbs_storage.limbs, w, 32);
    return s;
}

static void icicle_ok(cudaError_t e, const char *what)
{
    if (e != cudaSuccess) {
        fprintf(stderr, "error: %s: %s\n", what, cudaGetErrorString(e));
        exit(2);
    }
}

// The proving key's points: k_i * G, made at set-up (double and add from the top bit,
// one thread a point), in affine form.
template <class P, class A>
__global__ void key_points(const scalar_t *k, A *out, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        const scalar_t s = k[i];
        const P g = P::generator();
        P r = P::zero();
#pragma unroll 1
        for (int b = scalar_t::NBITS - 1; b >= 0; b--) {
            r = P::dbl(r);
            if ((s.limbs_storage.limbs[b / 32] >> (b % 32)) & 1)
                r = r + g;
        }
        out[i] = P::to_affine(r);
    }
}

template <class P, class A> static A *device_key(const std::vector<scalar_t> &logs)
{
    const size_t n = logs.size();
    scalar_t *d_k;
    A *d_p;
    CK(cudaMalloc(&d_k, n * sizeof(scalar_t)));
    CK(cudaMalloc(&d_p, n * sizeof(A)));
    CK(cudaMemcpy(d_k, logs.data(), n * sizeof(scalar_t), cudaMemcpyHostToDevice));
    key_points<P, A><<<1024, 128>>>(d_k, d_p, n);
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    CK(cudaFree(d_k));
    return d_p;
}

namespace { // (ICICLE's curve types have internal linkage: so do these)

struct Key {
    size_t n, npub;
    std::vector<scalar_t> kA, kB, kK, kZ; // the points' discrete logs (the CPU reference's)
    affine_t *A, *B, *K, *Z;               // G1, on the device
    g2_affine_t *B2;                       // G2, on the device
};

struct Witness {
    std::vector<scalar_t> a, b, c, wires;
};

struct Proof {
    projective_t ar, bs1, krs2, krs;
    g2_projective_t bs2;
    scalar_t *h; // on the device: kept for the last proof's check, else freed
};

} // namespace

// The solver's output: random wires, a and b, c = a*b pointwise.
static Witness make_witness(size_t n, Rng &rng)
{
    Witness w;
    w.a.resize(n), w.b.resize(n), w.c.resize(n), w.wires.resize(n);
    for (size_t i = 0; i < n; i++) {
        w.a[i] = rand_scalar(rng);
        w.b[i] = rand_scalar(rng);
        w.wires[i] = rand_scalar(rng);
        ref::Fr x, y;
        memcpy(x.v, w.a[i].limbs_storage.limbs, 32);
        memcpy(y.v, w.b[i].limbs_storage.limbs, 32);
        ref::Fr z = ref::mul(ref::mul(x, y), ref::R2); // (x y / R) R^2 / R = x y
        memcpy(w.c[i].limbs_storage.limbs, z.v, 32);
    }
    return w;
}

// Device slices as gnark's wrappers make them: cudaMallocAsync on the proof's
// stream, then an async copy from the (pageable) host slice.
static scalar_t *copy_to_device_async(const std::vector<scalar_t> &v, cudaStream_t s)
{
    scalar_t *d;
    CK(cudaMallocAsync(&d, v.size() * sizeof(scalar_t), s));
    CK(cudaMemcpyAsync(d, v.data(), v.size() * sizeof(scalar_t), cudaMemcpyHostToDevice, s));
    return d;
}

// computeHonDevice: h = coset_iNTT((coset_NTT(iNTT(a)) * coset_NTT(iNTT(b)) -
// coset_NTT(iNTT(c))) * den), left on the device (bit-reversed, kNR).
static scalar_t *compute_h(const Witness &w, int logn, cudaStream_t &stream)
{
    const size_t n = w.a.size();
    device_context::DeviceContext ctx{stream, 0, 0};
    ntt::NTTConfig<scalar_t> cfg = ntt::default_ntt_config<scalar_t>(ctx);
    cfg.is_async = true;
    cfg.are_inputs_on_device = true;
    cfg.are_outputs_on_device = true;

    scalar_t *a = copy_to_device_async(w.a, stream);
    scalar_t *b = copy_to_device_async(w.b, stream);
    scalar_t *c = copy_to_device_async(w.c, stream);

    cfg.ordering = ntt::Ordering::kNM;
    icicle_ok(bn254_ntt_cuda(a, (int)n, ntt::NTTDir::kInverse, cfg, a), "iNTT a");
    icicle_ok(bn254_ntt_cuda(b, (int)n, ntt::NTTDir::kInverse, cfg, b), "iNTT b");
    icicle_ok(bn254_ntt_cuda(c, (int)n, ntt::NTTDir::kInverse, cfg, c), "iNTT c");

    const scalar_t gen = scalar_t::omega(logn + 1);
    cfg.coset_gen = gen;
    cfg.ordering = ntt::Ordering::kMN;
    icicle_ok(bn254_ntt_cuda(a, (int)n, ntt::NTTDir::kForward, cfg, a), "coset NTT a");
    icicle_ok(bn254_ntt_cuda(b, (int)n, ntt::NTTDir::kForward, cfg, b), "coset NTT b");
    icicle_ok(bn254_ntt_cuda(c, (int)n, ntt::NTTDir::kForward, cfg, c), "coset NTT c");

    // den = 1 / (gen^n - 1), repeated n times on the host.
    scalar_t gn = gen;
    for (int i = 0; i < logn; i++)
        gn = scalar_t::sqr(gn);
    const scalar_t den = scalar_t::inverse(gn - scalar_t::one());
    std::vector<scalar_t> den_repeated(n, den);

    vec_ops::VecOpsConfig vcfg = vec_ops::DefaultVecOpsConfig(ctx);
    vcfg.is_a_on_device = true;
    vcfg.is_b_on_device = true;
    vcfg.is_result_on_device = true;
    icicle_ok(bn254_mul_cuda(a, b, (int)n, vcfg, a), "VecOp mul");
    icicle_ok(bn254_sub_cuda(a, c, (int)n, vcfg, a), "VecOp sub");
    CK(cudaMemcpyAsync(b, den_repeated.data(), n * sizeof(scalar_t), cudaMemcpyHostToDevice,
                       stream));
    icicle_ok(bn254_mul_cuda(a, b, (int)n, vcfg, a), "VecOp mul den");

    cfg.ordering = ntt::Ordering::kNR;
    icicle_ok(bn254_ntt_cuda(a, (int)n, ntt::NTTDir::kInverse, cfg, a), "coset iNTT h");
    CK(cudaFreeAsync(b, stream));
    CK(cudaFreeAsync(c, stream));
    return a;
}

static Proof prove(const Key &pk, const Witness &w, int logn, bool keep_h)
{
    const size_t n = pk.n;
    Proof pf;
    cudaStream_t stream;
    CK(cudaStreamCreate(&stream));
    device_context::DeviceContext ctx{stream, 0, 0};

    scalar_t *h = compute_h(w, logn, stream);

    msm::MSMConfig cfg = msm::default_msm_config(ctx);
    cfg.is_async = true;
    cfg.are_points_on_device = true;
    cfg.are_results_on_device = true;

    projective_t *out;
    CK(cudaMallocAsync(&out, sizeof(projective_t), stream));

    // Bs1 and Bs2 on the wires copied to the device once.
    scalar_t *wires_b = copy_to_device_async(w.wires, stream);
    cfg.are_scalars_on_device = true;
    icicle_ok(bn254_msm_cuda(wires_b, pk.B, (int)n, cfg, out), "MSM B (G1)");
    // An async copy into pageable memory returns once the copy is done: read at once.
    CK(cudaMemcpyAsync(&pf.bs1, out, sizeof(projective_t), cudaMemcpyDeviceToHost, stream));
    g2_projective_t *out_g2;
    CK(cudaMallocAsync(&out_g2, sizeof(g2_projective_t), stream));
    icicle_ok(bn254_g2_msm_cuda(wires_b, pk.B2, (int)n, cfg, out_g2), "MSM B (G2)");
    CK(cudaMemcpyAsync(&pf.bs2, out_g2, sizeof(g2_projective_t), cudaMemcpyDeviceToHost, stream));
    CK(cudaFreeAsync(out_g2, stream));
    CK(cudaFreeAsync(wires_b, stream));

    // Ar (CalAr): a stream and a config of its own, the wires from the host.
    {
        cudaStream_t s1;
        CK(cudaStreamCreate(&s1));
        device_context::DeviceContext ctx1{s1, 0, 0};
        msm::MSMConfig cfg1 = msm::default_msm_config(ctx1);
        cfg1.is_async = true;
        cfg1.are_points_on_device = true;
        cfg1.are_results_on_device = true;
        projective_t *out1;
        CK(cudaMallocAsync(&out1, sizeof(projective_t), s1));
        icicle_ok(bn254_msm_cuda(w.wires.data(), pk.A, (int)n, cfg1, out1), "MSM A");
        CK(cudaMemcpyAsync(&pf.ar, out1, sizeof(projective_t), cudaMemcpyDeviceToHost, s1));
        CK(cudaFreeAsync(out1, s1));
        CK(cudaStreamDestroy(s1));
    }

    // krs2 = MSM(h, Z), h on the device.
    icicle_ok(bn254_msm_cuda(h, pk.Z, (int)n, cfg, out), "MSM Z");
    CK(cudaMemcpyAsync(&pf.krs2, out, sizeof(projective_t), cudaMemcpyDeviceToHost, stream));
    if (keep_h) {
        pf.h = h;
    } else {
        CK(cudaFreeAsync(h, stream));
        pf.h = nullptr;
    }

    // krs = MSM(private wires, K), the wires from the host.
    cfg.are_scalars_on_device = false;
    icicle_ok(bn254_msm_cuda(w.wires.data() + pk.npub, pk.K, (int)(n - pk.npub), cfg, out),
              "MSM K");
    CK(cudaMemcpyAsync(&pf.krs, out, sizeof(projective_t), cudaMemcpyDeviceToHost, stream));
    CK(cudaFreeAsync(out, stream));
    CK(cudaStreamDestroy(stream));
    return pf;
}

template <class A> static void digest_point(Digest &dg, const A &p) { dg.add(&p, sizeof p); }

// sum_i s[off + i] k[i], as a canonical scalar.
static scalar_t dot(const std::vector<scalar_t> &s, size_t off, const std::vector<scalar_t> &k,
                    size_t n)
{
    ref::Fr acc = {{0, 0, 0, 0}};
    for (size_t i = 0; i < n; i++) {
        ref::Fr x;
        memcpy(x.v, s[off + i].limbs_storage.limbs, 32);
        acc = ref::add(acc, ref::mul(x, ref::from_std(k[i]))); // x (k R) / R = x k
    }
    scalar_t r;
    memcpy(r.limbs_storage.limbs, acc.v, 32);
    return r;
}

static size_t bitrev(size_t i, int bits)
{
    size_t r = 0;
    for (int b = 0; b < bits; b++)
        r |= ((i >> b) & 1) << (bits - 1 - b);
    return r;
}

// h as read back (bit-reversed: coefficient j at bitrev(j)) has degree below n - 1.
static bool h_top_zero(const std::vector<scalar_t> &h, int logn)
{
    const size_t n = h.size();
    return h[bitrev(n - 1, logn)] == scalar_t::zero();
}

// A(x) B(x) - C(x) == h(x) (x^n - 1), with A, B, C the interpolants of a, b, c on
// the domain w^i (w = scalar_t::omega(logn)) in barycentric form:
// A(x) = (x^n - 1) / n * sum_i a_i w^i / (x - w^i).
static bool h_is_quotient(const Witness &wt, const std::vector<scalar_t> &h, int logn,
                          const scalar_t &xs)
{
    const size_t n = h.size();
    const ref::Fr zero = {{0, 0, 0, 0}};
    const ref::Fr x = ref::from_std(xs);
    const ref::Fr w = ref::from_std(scalar_t::omega(logn));
    // d_i = x - w^i, inverted together; t_i = w^i / d_i.
    std::vector<ref::Fr> wi(n), pre(n);
    ref::Fr acc = ref::one(), cur = ref::one();
    for (size_t i = 0; i < n; i++) {
        wi[i] = cur;
        pre[i] = acc;
        acc = ref::mul(acc, ref::sub(x, cur));
        cur = ref::mul(cur, w);
    }
    ref::Fr inv = ref::inverse(acc);
    ref::Fr sa = zero, sb = zero, sc = zero;
    for (size_t i = n; i-- > 0;) {
        const ref::Fr t = ref::mul(wi[i], ref::mul(inv, pre[i])); // w^i / d_i
        inv = ref::mul(inv, ref::sub(x, wi[i]));
        sa = ref::add(sa, ref::mul(ref::from_std(wt.a[i]), t));
        sb = ref::add(sb, ref::mul(ref::from_std(wt.b[i]), t));
        sc = ref::add(sc, ref::mul(ref::from_std(wt.c[i]), t));
    }
    const ref::Fr zx = ref::sub(ref::pow(x, n), ref::one());
    const ref::Fr scale = ref::mul(zx, ref::inverse(ref::from_std(scalar_t::from((uint32_t)n))));
    const ref::Fr ax = ref::mul(scale, sa), bx = ref::mul(scale, sb), cx = ref::mul(scale, sc);
    ref::Fr hx = zero;
    for (size_t j = n; j-- > 0;)
        hx = ref::add(ref::mul(hx, x), ref::from_std(h[bitrev(j, logn)]));
    return ref::sub(ref::mul(ax, bx), cx) == ref::mul(hx, zx);
}

int main(int argc, char **argv)
{
    const int logn = arg_log(argc, argv, 1, 20, 10, 22);
    const int proofs = arg_log(argc, argv, 2, 4, 2, 16);
    const size_t n = (size_t)1 << logn;
    printf("icicle v2 groth16 bn254: domain 2^%d, MSMs of 2^%d points (4 G1, 1 G2), %d proofs "
           "(the first a warm-up)\n",
           logn, logn, proofs);
    fflush(stdout);

    // The CPU reference's arithmetic against ICICLE's host arithmetic.
    ref::init();
    {
        Rng t(11);
        bool ok = true;
        for (int i = 0; i < 256 && ok; i++) {
            scalar_t x = rand_scalar(t), y = rand_scalar(t);
            ref::Fr a = ref::from_std(x), b = ref::from_std(y);
            ok = ref::to_std(ref::mul(a, b)) == x * y && ref::to_std(ref::add(a, b)) == x + y &&
                 ref::to_std(ref::sub(a, b)) == x - y &&
                 ref::to_std(ref::inverse(a)) == scalar_t::inverse(x);
        }
        if (!ok) {
            fprintf(stderr, "error: the CPU reference's field arithmetic disagrees with ICICLE's\n");
            return 2;
        }
    }

    Digest dg;
    Checks ck;
    Rng rng(0x1c1c1e);

    // --- set-up: the proving key on the device, the NTT domain ---
    Key pk;
    pk.n = n;
    pk.npub = 8;
    for (auto *v : {&pk.kA, &pk.kB, &pk.kK, &pk.kZ}) {
        v->resize(n);
        for (auto &x : *v)
            x = rand_scalar(rng);
    }
    pk.kK.resize(n - pk.npub);
    pk.A = device_key<projective_t, affine_t>(pk.kA);
    pk.B = device_key<projective_t, affine_t>(pk.kB);
    pk.K = device_key<projective_t, affine_t>(pk.kK);
    pk.Z = device_key<projective_t, affine_t>(pk.kZ);
    pk.B2 = device_key<g2_projective_t, g2_affine_t>(pk.kB);
    {
        device_context::DeviceContext ctx = device_context::get_default_device_context();
        scalar_t root = scalar_t::omega(logn + 1);
        icicle_ok(bn254_initialize_domain(&root, ctx, false), "InitDomain");
    }

    // --- the proofs ---
    Phase phase;
    Witness last;
    Proof pf;
    pf.h = nullptr;
    for (int p = 0; p < proofs; p++) {
        Witness w = make_witness(n, rng);
        const bool is_last = p == proofs - 1;
        if (p > 0)
            phase.begin();
        pf = prove(pk, w, logn, is_last);
        if (p > 0)
            phase.end();
        digest_point(dg, projective_t::to_affine(pf.ar));
        digest_point(dg, projective_t::to_affine(pf.bs1));
        digest_point(dg, g2_projective_t::to_affine(pf.bs2));
        digest_point(dg, projective_t::to_affine(pf.krs2));
        digest_point(dg, projective_t::to_affine(pf.krs));
        if (is_last)
            last = std::move(w);
    }
    phase.print();

    // --- checks on the last proof ---
    std::vector<scalar_t> h(n);
    CK(cudaMemcpy(h.data(), pf.h, n * sizeof(scalar_t), cudaMemcpyDeviceToHost));
    CK(cudaFree(pf.h));
    dg.add(h.data(), n * sizeof(scalar_t));

    const scalar_t sA = dot(last.wires, 0, pk.kA, n);
    const scalar_t sB = dot(last.wires, 0, pk.kB, n);
    const scalar_t sK = dot(last.wires, pk.npub, pk.kK, n - pk.npub);
    const scalar_t sZ = dot(h, 0, pk.kZ, n);
    ck.expect(pf.ar == sA * projective_t::generator(), "MSM A differs from (sum s_i k_i) G");
    ck.expect(pf.bs1 == sB * projective_t::generator(), "MSM B (G1) differs from (sum s_i k_i) G");
    ck.expect(pf.bs2 == sB * g2_projective_t::generator(),
              "MSM B (G2) differs from (sum s_i k_i) G2");
    ck.expect(pf.krs == sK * projective_t::generator(), "MSM K differs from (sum s_i k_i) G");
    ck.expect(pf.krs2 == sZ * projective_t::generator(), "MSM Z differs from (sum h_i k_i) G");

    // h: degree below n - 1, and A(x) B(x) - C(x) = h(x) (x^n - 1) at a random x.
    ck.expect(h_top_zero(h, logn), "h has degree n - 1");
    ck.expect(h_is_quotient(last, h, logn, rand_scalar(rng)),
              "A(x) B(x) - C(x) != h(x) (x^n - 1): h is not the quotient");

    for (void *p : {(void *)pk.A, (void *)pk.B, (void *)pk.K, (void *)pk.Z, (void *)pk.B2})
        CK(cudaFree(p));
    return finish(dg, ck);
}
