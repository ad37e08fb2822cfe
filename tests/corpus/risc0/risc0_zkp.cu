// risc0_zkp.cu - corpus driver for RISC Zero's STARK prover kernels, built from the
// carried risc0 tree: risc0/sys/kernels/zkp/cuda (ffi.cu, eltwise.cu, kernels.cu,
// sha.cu, combos.cu, fri_prove.cu, supra/ntt.cu, supra/poseidon2.cu) over its
// vendored sppark (vendor/sppark). It runs one proof's worth of the prover's GPU
// work on random trace columns, in the prover's order and through the prover's
// HAL call pattern:
//   risc0/zkp/src/hal/cuda.rs      CudaHal: primary context, one stream; one
//                                  cuMemAlloc per buffer (cuMemsetD8/D32 when
//                                  zeroed), copy_from = async copy + stream sync,
//                                  get_at = one-element async read + sync, view /
//                                  view_mut = whole-slice reads (and writes) + sync,
//                                  cuMemFree on drop
//   risc0/sys/kernels/zkp/cuda/cuda.h  launchKernel: cudaLaunchKernelEx, then
//                                  cudaStreamSynchronize after every kernel
//   risc0/zkp/src/prove/prover.rs  commit_group (make_coeffs: copy, iNTT, zk_shift),
//                                  finalize (eval_u, mix_poly_coeffs, combos_prepare,
//                                  combos_divide, eltwise_sum, bit reverse, FRI)
//   risc0/zkp/src/prove/poly_group.rs, merkle.rs, fri.rs  LDE + Merkle tree
//                                  (hash_rows, a hash_fold per layer, root by
//                                  get_at(1), top layer by view), FRI rounds, queries
// The circuit's own kernels (witness generation, eval_check) are not run: the
// witness is random and the check polynomial is an eltwise sum of two slices of
// the data group's evaluations. combos_divide runs risc0_divide.cu.
//
// Checks on the CPU: interpolation and LDE against direct evaluation with the
// roots of risc0/core/src/field/baby_bear.rs, batch_evaluate_any against Horner in
// FpExt, Merkle openings of the data tree (risc0_ref.cpp: sha-256 and poseidon2
// from risc0's sources) up to the committed top layer and root, the last FRI fold.
//
// phase_ms: the proof, from the first witness upload to the query openings read
// back (one proof a process: the kernels' first loads are in it); the HAL set-up
// before, the witness generation and the checks after stay outside.
//
// usage: risc0 [PO2 12..22 (20)] [poseidon2|sha256]
#include "cuda/fp.h"
#include "cuda/fpext.h"
#include "cuda/kernels.h"
#include <util/rusterror.h>

#include <algorithm>
#include <initializer_list>
#include <string>
#include <vector>

#include "../common/corpus.h"

extern "C" {
const char *risc0_zkp_cuda_eltwise_add_fp(cudaStream_t, Fp *, const Fp *, const Fp *, uint32_t);
const char *risc0_zkp_cuda_eltwise_copy_fp(cudaStream_t, Fp *, const Fp *, uint32_t);
const char *risc0_zkp_cuda_eltwise_sum_fpext(cudaStream_t, Fp *, const FpExt *, uint32_t, uint32_t);
const char *risc0_zkp_cuda_batch_bit_reverse(cudaStream_t, Fp *, uint32_t, uint32_t);
const char *risc0_zkp_cuda_batch_evaluate_any(cudaStream_t, FpExt *, const Fp *, const uint32_t *,
                                              const FpExt *, uint32_t, uint32_t, uint32_t);
const char *risc0_zkp_cuda_mix_poly_coeffs(cudaStream_t, FpExt *, const Fp *, const uint32_t *,
                                           const FpExt *, const FpExt *, uint32_t, uint32_t);
const char *risc0_zkp_cuda_combos_prepare(cudaStream_t, FpExt *, const FpExt *, uint32_t, uint32_t,
                                          uint32_t, const uint32_t *, const uint32_t *, uint32_t,
                                          const FpExt *);
const char *risc0_zkp_cuda_fri_fold(cudaStream_t, Fp *, const Fp *, const FpExt *, uint32_t);
const char *risc0_zkp_cuda_sha_rows(cudaStream_t, void *, const Fp *, uint32_t, uint32_t);
const char *risc0_zkp_cuda_sha_fold(cudaStream_t, void *, const void *, uint32_t);
const char *risc0_zkp_cuda_fri_prove(cudaStream_t, uint32_t *, size_t, uint32_t *, size_t, uint32_t *,
                                     size_t, CudaMerkleTreeProver *, size_t, uint32_t *);
RustError::by_value sppark_batch_expand(cudaStream_t, Fp *, Fp *, uint32_t, uint32_t, uint32_t);
RustError::by_value sppark_batch_NTT(cudaStream_t, Fp *, uint32_t, uint32_t);
RustError::by_value sppark_batch_iNTT(cudaStream_t, Fp *, uint32_t, uint32_t);
RustError::by_value sppark_batch_zk_shift(cudaStream_t, Fp *, uint32_t, uint32_t);
RustError::by_value sppark_poseidon2_rows(cudaStream_t, void *, const Fp *, uint32_t, uint32_t);
RustError::by_value sppark_poseidon2_fold(cudaStream_t, void *, const void *, size_t);
RustError::by_value corpus_poly_divide(cudaStream_t, FpExt *, size_t, FpExt *, const FpExt &);
}
void ref_poseidon2_row(const uint32_t *vals, size_t cols, uint32_t out[8]);
void ref_poseidon2_pair(const uint32_t a[8], const uint32_t b[8], uint32_t out[8]);
void ref_sha_row(const uint32_t *vals, size_t cols, uint32_t out[8]);
void ref_sha_pair(const uint32_t a[8], const uint32_t b[8], uint32_t out[8]);

// risc0/zkp/src/lib.rs
static const size_t INV_RATE = 4, QUERIES = 50, FRI_FOLD = 16, FRI_MIN_DEGREE = 256, EXT = 4;
static const size_t CHECK_SIZE = INV_RATE * EXT;

struct Dg {
    uint32_t w[8];
    bool operator==(const Dg &o) const { return !memcmp(w, o.w, sizeof w); }
};

static struct {
    CUdevice dev;
    CUcontext ctx;
    CUstream stream;
    uint32_t max_threads;
    bool sha;
} H;

static cudaStream_t S() { return (cudaStream_t)H.stream; }

static size_t log2z(size_t n)
{
    size_t r = 0;
    while (((size_t)1 << r) < n)
        r++;
    return r;
}

static void ffi(const char *err, const char *what)
{
    if (err) {
        fprintf(stderr, "error: %s: %s\n", what, err);
        exit(2);
    }
}

static void spk(RustError::by_value e, const char *what)
{
    if (e.code) {
        fprintf(stderr, "error: %s: %s\n", what,
                e.message ? e.message : cudaGetErrorString((cudaError_t)e.code));
        exit(2);
    }
}

// BufferImpl<T>: one driver allocation per buffer.
template <class T> struct Buf {
    CUdeviceptr ptr = 0;
    size_t size = 0;
    T *dev(size_t off = 0) const { return (T *)ptr + off; }
};

template <class T> static Buf<T> alloc(size_t n)
{
    Buf<T> b;
    b.size = n;
    CU(cuMemAlloc(&b.ptr, n * sizeof(T)));
    return b;
}

template <class T> static Buf<T> alloc_zeroed(size_t n) // DeviceBuffer::zeroed
{
    Buf<T> b = alloc<T>(n);
    CU(cuMemsetD8(b.ptr, 0, n * sizeof(T)));
    return b;
}

template <class T> static Buf<T> alloc_set_u32(size_t n, uint32_t v) // RawBuffer::set_u32
{
    Buf<T> b = alloc<T>(n);
    CU(cuMemsetD32(b.ptr, v, n * sizeof(T) / 4));
    return b;
}

template <class T> static Buf<T> copy_from(const std::vector<T> &host)
{
    Buf<T> b = alloc<T>(host.size());
    CU(cuMemcpyHtoDAsync(b.ptr, host.data(), host.size() * sizeof(T), H.stream));
    CU(cuStreamSynchronize(H.stream));
    return b;
}

template <class T> static void release(Buf<T> &b)
{
    if (b.ptr)
        CU(cuMemFree(b.ptr));
    b.ptr = 0;
}

template <class T> static T get_at(const Buf<T> &b, size_t idx)
{
    T v;
    CU(cuMemcpyDtoHAsync(&v, b.ptr + idx * sizeof(T), sizeof(T), H.stream));
    CU(cuStreamSynchronize(H.stream));
    return v;
}

template <class T> static std::vector<T> view(const Buf<T> &b, size_t off, size_t n)
{
    std::vector<T> v(n);
    CU(cuMemcpyDtoHAsync(v.data(), b.ptr + off * sizeof(T), n * sizeof(T), H.stream));
    CU(cuStreamSynchronize(H.stream));
    return v;
}

template <class T, class F> static void view_mut(Buf<T> &b, F f)
{
    std::vector<T> v(b.size);
    CU(cuMemcpyDtoHAsync(v.data(), b.ptr, b.size * sizeof(T), H.stream));
    CU(cuStreamSynchronize(H.stream));
    f(v);
    CU(cuMemcpyHtoDAsync(b.ptr, v.data(), b.size * sizeof(T), H.stream));
    CU(cuStreamSynchronize(H.stream));
}

// The transcript stand-in: challenges depend on everything committed so far.
struct Iop {
    Rng r{0x1e5c0de};
    Digest *dg = nullptr;
    void commit(const void *p, size_t n)
    {
        Digest d;
        d.add(p, n);
        r.s ^= d.h;
        dg->add(p, n);
    }
    FpExt ext()
    {
        return FpExt(Fp((uint32_t)(r.next() % Fp::P)), Fp((uint32_t)(r.next() % Fp::P)),
                     Fp((uint32_t)(r.next() % Fp::P)), Fp((uint32_t)(r.next() % Fp::P)));
    }
    uint32_t random_bits(size_t bits) { return (uint32_t)(r.next() & (((uint64_t)1 << bits) - 1)); }
};

// --- HAL operations (cuda.rs) ---

static void batch_expand_into_evaluate_ntt(Buf<Fp> &out, Buf<Fp> &in, size_t count)
{
    size_t out_size = out.size / count, in_size = in.size / count;
    uint32_t expand_bits = (uint32_t)log2z(out_size / in_size);
    spk(sppark_batch_expand(S(), out.dev(), in.dev(), (uint32_t)log2z(in_size), expand_bits,
                            (uint32_t)count),
        "sppark_batch_expand");
    spk(sppark_batch_NTT(S(), out.dev(), (uint32_t)log2z(out_size), (uint32_t)count),
        "sppark_batch_NTT");
}

static void batch_interpolate_ntt(Buf<Fp> &io, size_t count)
{
    spk(sppark_batch_iNTT(S(), io.dev(), (uint32_t)log2z(io.size / count), (uint32_t)count),
        "sppark_batch_iNTT");
}

static void zk_shift(Buf<Fp> &io, size_t count)
{
    spk(sppark_batch_zk_shift(S(), io.dev(), (uint32_t)log2z(io.size / count), (uint32_t)count),
        "sppark_batch_zk_shift");
}

static void batch_bit_reverse(Buf<Fp> &io, size_t count)
{
    ffi(risc0_zkp_cuda_batch_bit_reverse(S(), io.dev(), (uint32_t)log2z(io.size / count),
                                         (uint32_t)io.size),
        "batch_bit_reverse");
}

static void eltwise_copy(Buf<Fp> &out, const Buf<Fp> &in)
{
    ffi(risc0_zkp_cuda_eltwise_copy_fp(S(), out.dev(), in.dev(), (uint32_t)out.size),
        "eltwise_copy_fp");
}

static void batch_evaluate_any(const Buf<Fp> &coeffs, size_t poly_count, const Buf<uint32_t> &which,
                               const Buf<FpExt> &xs, Buf<FpExt> &out)
{
    uint32_t count = 1u << log2z(coeffs.size / poly_count);
    uint32_t tpb = H.max_threads / 4;
    uint32_t shared = tpb * 4 * 4;
    ffi(risc0_zkp_cuda_batch_evaluate_any(S(), out.dev(), coeffs.dev(), which.dev(), xs.dev(), shared,
                                          (uint32_t)(out.size * tpb), count),
        "batch_evaluate_any");
}

static void hash_rows(Buf<Dg> &nodes, size_t rows, const Buf<Fp> &matrix, size_t cols)
{
    if (H.sha)
        ffi(risc0_zkp_cuda_sha_rows(S(), nodes.dev(rows), matrix.dev(), (uint32_t)rows,
                                    (uint32_t)cols),
            "sha_rows");
    else
        spk(sppark_poseidon2_rows(S(), nodes.dev(rows), matrix.dev(), (uint32_t)rows,
                                  (uint32_t)cols),
            "sppark_poseidon2_rows");
}

static void hash_fold(Buf<Dg> &nodes, size_t out_size)
{
    if (H.sha)
        ffi(risc0_zkp_cuda_sha_fold(S(), nodes.dev(out_size), nodes.dev(2 * out_size),
                                    (uint32_t)out_size),
            "sha_fold");
    else
        spk(sppark_poseidon2_fold(S(), nodes.dev(out_size), nodes.dev(2 * out_size), out_size),
            "sppark_poseidon2_fold");
}

static void ref_row(const uint32_t *v, size_t n, Dg &out)
{
    H.sha ? ref_sha_row(v, n, out.w) : ref_poseidon2_row(v, n, out.w);
}

static void ref_pair(const Dg &a, const Dg &b, Dg &out)
{
    H.sha ? ref_sha_pair(a.w, b.w, out.w) : ref_poseidon2_pair(a.w, b.w, out.w);
}

// --- MerkleTreeProver (merkle.rs) ---

struct Merkle {
    size_t rows = 0, cols = 0, layers = 0, top_size = 0;
    const Buf<Fp> *matrix = nullptr;
    Buf<Dg> nodes;
    Dg root;
    std::vector<Dg> top;
};

static Merkle merkle_new(const Buf<Fp> &matrix, size_t rows, size_t cols)
{
    Merkle m;
    m.rows = rows;
    m.cols = cols;
    m.matrix = &matrix;
    m.layers = log2z(rows);
    size_t top_layer = 0;
    for (size_t i = 1; i < m.layers; i++) {
        if (((size_t)1 << i) > QUERIES)
            break;
        top_layer = i;
    }
    m.top_size = (size_t)1 << top_layer;
    m.nodes = alloc<Dg>(rows * 2);
    hash_rows(m.nodes, rows, matrix, cols);
    for (size_t i = m.layers; i-- > 0;)
        hash_fold(m.nodes, (size_t)1 << i);
    m.root = get_at(m.nodes, 1);
    return m;
}

static void merkle_commit(Merkle &m, Iop &iop)
{
    m.top = view(m.nodes, m.top_size, m.top_size);
    iop.commit(m.top.data(), m.top.size() * sizeof(Dg));
    iop.commit(&m.root, sizeof m.root);
}

// --- PolyGroup (poly_group.rs) ---

struct PolyGroup {
    Buf<Fp> coeffs;
    size_t count = 0;
    Buf<Fp> evaluated;
    Merkle merkle;
};

static PolyGroup *poly_group(Buf<Fp> coeffs, size_t count, size_t size, Iop &iop)
{
    PolyGroup *pg = new PolyGroup;
    pg->coeffs = coeffs;
    pg->count = count;
    pg->evaluated = alloc<Fp>(count * size * INV_RATE);
    batch_expand_into_evaluate_ntt(pg->evaluated, pg->coeffs, count);
    batch_bit_reverse(pg->coeffs, count);
    pg->merkle = merkle_new(pg->evaluated, size * INV_RATE, count);
    merkle_commit(pg->merkle, iop);
    return pg;
}

// --- the CPU reference ---

static Fp rou_fwd(size_t po2) // ROU_FWD[27] = 137 in risc0/core/src/field/baby_bear.rs
{
    Fp w(137);
    for (size_t i = 27; i > po2; i--)
        w = w * w;
    return w;
}

static Fp horner(const std::vector<Fp> &c, Fp x)
{
    Fp acc;
    for (size_t j = c.size(); j-- > 0;)
        acc = acc * x + c[j];
    return acc;
}

static FpExt horner_ext(const std::vector<Fp> &c, FpExt x)
{
    FpExt acc;
    for (size_t j = c.size(); j-- > 0;)
        acc = acc * x + c[j];
    return acc;
}

struct Group {
    const char *name;
    size_t cols;
    std::vector<uint32_t> backs;
    uint32_t combo;
};

int main(int argc, char **argv)
{
    const size_t po2 = (size_t)arg_log(argc, argv, 1, 20, 12, 22);
    std::string hash = argc > 2 ? argv[2] : "poseidon2";
    if (hash != "poseidon2" && hash != "sha256") {
        fprintf(stderr, "usage: %s [PO2 12..22] [poseidon2|sha256]\n", argv[0]);
        return 64;
    }
    H.sha = hash == "sha256";
    const size_t n = (size_t)1 << po2, domain = n * INV_RATE;
    printf("risc0 zkp prover kernels: po2 %zu, %s\n", po2, hash.c_str());
    fflush(stdout);

    Digest dg;
    Checks ck;
    Iop iop;
    iop.dg = &dg;

    // The CPU reference on its own: the roots and poseidon2 against risc0's values.
    {
        bool ok = rou_fwd(2) == Fp(284861408) && rou_fwd(26) == Fp(18769);
        uint32_t in[17] = {943718400, 1887436800, 2013125296, 1761607679, 692060158, 1635778558,
                           566231037, 1509949437, 440401916,  1384120316, 314572795, 1258291195,
                           188743674, 1132462074, 62914553,  1006632953, 1950351353};
        uint32_t gold[8] = {0x622615d7, 0x1cfe9764, 0x166cb1c9, 0x76febcde,
                            0x6056219f, 0x326359cf, 0x5c2cca75, 0x233dc3ff};
        uint32_t raw[17], out[8];
        for (int i = 0; i < 17; i++)
            raw[i] = Fp(in[i]).asRaw();
        ref_poseidon2_row(raw, 17, out);
        for (int i = 0; i < 8; i++)
            ok = ok && out[i] == Fp(gold[i]).asRaw();
        if (!ok) {
            fprintf(stderr, "error: the CPU reference disagrees with risc0's test vectors\n");
            return 2;
        }
    }

    // CudaHal::new: primary context, SCHED_AUTO, one stream.
    int mt = 0;
    CU(cuInit(0));
    CU(cuDeviceGet(&H.dev, 0));
    CU(cuDeviceGetAttribute(&mt, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, H.dev));
    H.max_threads = (uint32_t)mt;
    CU(cuDevicePrimaryCtxRetain(&H.ctx, H.dev));
    CU(cuCtxSetCurrent(H.ctx));
    CU(cuDevicePrimaryCtxSetFlags(H.dev, CU_CTX_SCHED_AUTO));
    CU(cuStreamCreateWithPriority(&H.stream, 0, 0));

    // The witness columns (the circuit's, random here), made before the clock starts.
    std::vector<Group> groups = {{"data", 16, {0, 1}, 0}, {"accum", 4, {0}, 1}};
    const uint32_t combo_count = 2;
    std::vector<std::vector<Fp>> witnesses;
    Rng rng(0x71c0de);
    for (auto &g : groups) {
        std::vector<Fp> w(g.cols * n);
        for (auto &x : w)
            x = Fp::fromRaw((uint32_t)(rng.next() % Fp::P));
        witnesses.push_back(std::move(w));
    }

    // The proof, by the clock: from the first upload to the query openings read back.
    Phase phase;
    phase.sync = phase_sync_driver;
    phase.begin();

    // --- commit_group for each tap group ---
    std::vector<PolyGroup *> pgs;
    std::vector<Fp> witness0;
    for (size_t gi = 0; gi < groups.size(); gi++) {
        Group &g = groups[gi];
        std::vector<Fp> &w = witnesses[gi];
        Buf<Fp> witness = copy_from(w);
        Buf<Fp> coeffs = alloc<Fp>(witness.size); // make_coeffs
        eltwise_copy(coeffs, witness);
        batch_interpolate_ntt(coeffs, g.cols);
        zk_shift(coeffs, g.cols);
        pgs.push_back(poly_group(coeffs, g.cols, n, iop));
        release(witness);
        if (pgs.size() == 1)
            witness0.swap(w);
    }

    // --- finalize ---
    FpExt poly_mix = iop.ext();
    (void)poly_mix;
    Buf<Fp> check_poly = alloc<Fp>(EXT * domain);
    ffi(risc0_zkp_cuda_eltwise_add_fp(S(), check_poly.dev(), pgs[0]->evaluated.dev(),
                                      pgs[0]->evaluated.dev(EXT * domain), (uint32_t)(EXT * domain)),
        "eltwise_add_fp");
    batch_interpolate_ntt(check_poly, EXT);
    PolyGroup *check = poly_group(check_poly, CHECK_SIZE, n, iop);

    FpExt z = iop.ext();
    Fp back_one = inv(rou_fwd(po2));
    std::vector<FpExt> eval_u;
    std::vector<uint32_t> reg_sizes, reg_combo_ids;
    std::vector<std::vector<FpExt>> xs_of(groups.size());
    for (size_t gi = 0; gi < groups.size(); gi++) {
        std::vector<uint32_t> which;
        std::vector<FpExt> xs;
        for (uint32_t c = 0; c < groups[gi].cols; c++) {
            for (uint32_t back : groups[gi].backs) {
                which.push_back(c);
                xs.push_back(FpExt(pow(back_one, back)) * z);
            }
            reg_sizes.push_back((uint32_t)groups[gi].backs.size());
            reg_combo_ids.push_back(groups[gi].combo);
        }
        Buf<uint32_t> wbuf = copy_from(which);
        Buf<FpExt> xbuf = copy_from(xs);
        Buf<FpExt> out = alloc<FpExt>(which.size());
        batch_evaluate_any(pgs[gi]->coeffs, pgs[gi]->count, wbuf, xbuf, out);
        std::vector<FpExt> v = view(out, 0, out.size);
        eval_u.insert(eval_u.end(), v.begin(), v.end());
        xs_of[gi] = xs;
        release(wbuf);
        release(xbuf);
        release(out);
    }
    // The prover interpolates U per register on the CPU; the values stand in here.
    std::vector<FpExt> coeff_u = eval_u;
    FpExt z_pow = pow(z, EXT);
    {
        std::vector<uint32_t> which(CHECK_SIZE);
        for (size_t i = 0; i < CHECK_SIZE; i++)
            which[i] = (uint32_t)i;
        std::vector<FpExt> xs(CHECK_SIZE, z_pow);
        Buf<FpExt> out = alloc<FpExt>(CHECK_SIZE);
        Buf<uint32_t> wbuf = copy_from(which);
        Buf<FpExt> xbuf = copy_from(xs);
        batch_evaluate_any(check->coeffs, CHECK_SIZE, wbuf, xbuf, out);
        std::vector<FpExt> v = view(out, 0, out.size);
        coeff_u.insert(coeff_u.end(), v.begin(), v.end());
        iop.commit(coeff_u.data(), coeff_u.size() * sizeof(FpExt));
        release(out);
        release(wbuf);
        release(xbuf);
    }

    FpExt mix = iop.ext();
    Buf<FpExt> combos = alloc_set_u32<FpExt>(n * (combo_count + 1), 0);
    {
        FpExt cur_mix(1);
        for (size_t gi = 0; gi < groups.size(); gi++) {
            std::vector<uint32_t> which(groups[gi].cols, groups[gi].combo);
            Buf<uint32_t> wbuf = copy_from(which);
            ffi(risc0_zkp_cuda_mix_poly_coeffs(S(), combos.dev(), pgs[gi]->coeffs.dev(), wbuf.dev(),
                                               &cur_mix, &mix, (uint32_t)groups[gi].cols,
                                               (uint32_t)n),
                "mix_poly_coeffs");
            cur_mix *= pow(mix, groups[gi].cols);
            release(wbuf);
        }
        std::vector<uint32_t> which(CHECK_SIZE, combo_count);
        Buf<uint32_t> wbuf = copy_from(which);
        ffi(risc0_zkp_cuda_mix_poly_coeffs(S(), combos.dev(), check->coeffs.dev(), wbuf.dev(),
                                           &cur_mix, &mix, (uint32_t)CHECK_SIZE, (uint32_t)n),
            "mix_poly_coeffs");
        release(wbuf);
    }
    {
        Buf<FpExt> cu = copy_from(coeff_u);
        Buf<uint32_t> rs = copy_from(reg_sizes);
        Buf<uint32_t> rc = copy_from(reg_combo_ids);
        Buf<FpExt> mx = copy_from(std::vector<FpExt>{mix});
        ffi(risc0_zkp_cuda_combos_prepare(S(), combos.dev(), cu.dev(), combo_count, (uint32_t)n,
                                          (uint32_t)reg_sizes.size(), rs.dev(), rc.dev(),
                                          (uint32_t)CHECK_SIZE, mx.dev()),
            "combos_prepare");
        release(cu);
        release(rs);
        release(rc);
        release(mx);
    }
    // combos_divide: one division (and one 16-byte read) per combo and back.
    for (uint32_t i = 0; i <= combo_count; i++) {
        std::vector<FpExt> pows;
        if (i == combo_count)
            pows.push_back(z_pow);
        else
            for (uint32_t back : groups[i].backs)
                pows.push_back(z * FpExt(pow(back_one, back)));
        for (const FpExt &p : pows) {
            FpExt rem;
            spk(corpus_poly_divide(S(), combos.dev(i * n), n, &rem, p), "poly_divide");
            dg.add(&rem, sizeof rem);
        }
    }
    Buf<Fp> final_coeffs = alloc<Fp>(n * EXT);
    ffi(risc0_zkp_cuda_eltwise_sum_fpext(S(), final_coeffs.dev(), combos.dev(), combo_count + 1,
                                         (uint32_t)n),
        "eltwise_sum_fpext");
    batch_bit_reverse(final_coeffs, EXT);

    // --- fri_prove (fri.rs) ---
    struct Round {
        size_t domain;
        Buf<Fp> evaluated, out;
        Merkle merkle;
        const Buf<Fp> *in;
        FpExt mix;
    };
    std::vector<Round *> rounds;
    const size_t orig_domain = final_coeffs.size / EXT * INV_RATE;
    const Buf<Fp> *coeffs = &final_coeffs;
    while (coeffs->size / EXT > FRI_MIN_DEGREE) {
        Round *r = new Round;
        size_t size = coeffs->size / EXT;
        r->domain = size * INV_RATE;
        r->in = coeffs;
        r->evaluated = alloc<Fp>(r->domain * EXT);
        batch_expand_into_evaluate_ntt(r->evaluated, *const_cast<Buf<Fp> *>(coeffs), EXT);
        r->merkle = merkle_new(r->evaluated, r->domain / FRI_FOLD, FRI_FOLD * EXT);
        merkle_commit(r->merkle, iop);
        r->mix = iop.ext();
        r->out = alloc<Fp>(size / FRI_FOLD * EXT);
        ffi(risc0_zkp_cuda_fri_fold(S(), r->out.dev(), coeffs->dev(), &r->mix,
                                    (uint32_t)(r->out.size / EXT)),
            "fri_fold");
        rounds.push_back(r);
        coeffs = &r->out;
    }
    Buf<Fp> last = alloc<Fp>(coeffs->size);
    eltwise_copy(last, *coeffs);
    batch_bit_reverse(last, EXT);
    {
        std::vector<Fp> v = view(last, 0, last.size);
        iop.commit(v.data(), v.size() * sizeof(Fp));
    }
    Buf<uint32_t> positions = alloc<uint32_t>(QUERIES);
    std::vector<uint32_t> pos_host;
    view_mut(positions, [&](std::vector<uint32_t> &p) {
        for (auto &x : p)
            x = iop.random_bits(log2z(orig_domain));
        pos_host = p;
    });
    std::vector<Merkle *> trees = {&pgs[0]->merkle, &pgs[1]->merkle, &check->merkle};
    for (Round *r : rounds)
        trees.push_back(&r->merkle);
    const size_t T = trees.size();
    Buf<uint32_t> groups_buf = alloc<uint32_t>(T);
    view_mut(groups_buf, [&](std::vector<uint32_t> &gv) {
        for (size_t i = 0; i < T; i++)
            gv[i] = i < 3 ? UINT32_MAX : (uint32_t)(rounds[i - 3]->domain / FRI_FOLD);
    });
    size_t vw = 0, dw = 0;
    for (Merkle *m : trees) {
        vw = std::max(vw, m->cols + 1);
        dw = std::max(dw, m->layers * 8 + 1);
    }
    Buf<uint32_t> out_values = alloc<uint32_t>(vw * QUERIES * T);
    Buf<uint32_t> out_digests = alloc<uint32_t>(dw * QUERIES * T);
    std::vector<CudaMerkleTreeProver> tp(T);
    for (size_t i = 0; i < T; i++)
        tp[i] = {trees[i]->rows, trees[i]->cols, trees[i]->top_size,
                 (const uint32_t *)trees[i]->matrix->dev(), (const uint32_t *)trees[i]->nodes.dev()};
    Buf<CudaMerkleTreeProver> trees_buf = copy_from(tp);
    ffi(risc0_zkp_cuda_fri_prove(S(), out_values.dev(), vw, out_digests.dev(), dw, positions.dev(),
                                 QUERIES, trees_buf.dev(), T, groups_buf.dev()),
        "fri_prove");
    std::vector<uint32_t> ov = view(out_values, 0, out_values.size);
    std::vector<uint32_t> od = view(out_digests, 0, out_digests.size);
    phase.end();
    // Each chunk is a length and that many words; the kernels leave the rest unwritten.
    for (size_t i = 0; i < QUERIES * T; i++) {
        const uint32_t *a = &ov[i * vw], *b = &od[i * dw];
        dg.add(a, (std::min<size_t>(a[0], vw - 1) + 1) * 4);
        dg.add(b, (std::min<size_t>(b[0], dw - 1) + 1) * 4);
    }

    // --- checks ---
    // Openings of the data tree: the column hashes up through the siblings to the
    // committed top layer, and the top layer to the root.
    {
        Merkle &m = pgs[0]->merkle;
        for (size_t q = 0; q < 8; q++) {
            const uint32_t *vals = &ov[(q * T + 0) * vw];
            const uint32_t *digs = &od[(q * T + 0) * dw];
            ck.expect(vals[0] == m.cols, "query %zu: %u values, not %zu", q, vals[0], m.cols);
            Dg cur;
            ref_row(vals + 1, m.cols, cur);
            size_t idx = pos_host[q] + m.rows, level = 0;
            while (idx >= 2 * m.top_size) {
                Dg sib, up;
                memcpy(sib.w, digs + 1 + 8 * level, 32);
                if (idx % 2)
                    ref_pair(sib, cur, up);
                else
                    ref_pair(cur, sib, up);
                cur = up;
                idx /= 2;
                level++;
            }
            ck.expect(digs[0] == level * 8, "query %zu: %u digest words, not %zu", q, digs[0],
                      level * 8);
            ck.expect(cur == m.top[idx - m.top_size], "query %zu: opening does not reach the top",
                      q);
        }
        std::vector<Dg> layer = m.top;
        while (layer.size() > 1) {
            std::vector<Dg> up(layer.size() / 2);
            for (size_t i = 0; i < up.size(); i++)
                ref_pair(layer[2 * i], layer[2 * i + 1], up[i]);
            layer.swap(up);
        }
        ck.expect(layer[0] == m.root, "the top layer does not hash to the root");
    }
    // Interpolation, zk shift and LDE of two data columns, and batch_evaluate_any.
    {
        const Fp w = rou_fwd(po2), wbig = rou_fwd(po2 + 2), inv3 = inv(Fp(3));
        PolyGroup &pg = *pgs[0];
        const size_t cols[2] = {0, groups[0].cols - 1};
        for (size_t c : cols) {
            std::vector<Fp> s = view(pg.coeffs, c * n, n);
            size_t is[3] = {0, 1, (size_t)rng.below((uint32_t)n)};
            for (size_t i : is)
                ck.expect(horner(s, pow(w, i) * inv3) == witness0[c * n + i],
                          "column %zu: coefficients do not interpolate the witness at %zu", c, i);
            size_t ks[3] = {0, domain - 1, (size_t)rng.below((uint32_t)domain)};
            for (size_t k : ks)
                ck.expect(get_at(pg.evaluated, c * domain + k) == horner(s, pow(wbig, k)),
                          "column %zu: LDE differs at %zu", c, k);
            const size_t nb = groups[0].backs.size();
            for (size_t b = 0; b < nb; b++)
                ck.expect(eval_u[c * nb + b] == horner_ext(s, xs_of[0][c * nb + b]),
                          "column %zu: batch_evaluate_any differs (back %zu)", c, b);
        }
    }
    // The last FRI fold, as kernels.cu's fri_fold defines it.
    if (!rounds.empty()) {
        Round &r = *rounds.back();
        std::vector<Fp> in = view(*r.in, 0, r.in->size), out = view(r.out, 0, r.out.size);
        const size_t count = r.out.size / EXT;
        bool ok = true;
        for (size_t idx = 0; idx < count; idx++) {
            FpExt tot, cur(1);
            for (uint32_t i = 0; i < FRI_FOLD; i++) {
                uint32_t rev = ((i & 1) << 3) | ((i & 2) << 1) | ((i & 4) >> 1) | ((i & 8) >> 3);
                size_t ri = rev * count + idx;
                FpExt f(in[0 * count * FRI_FOLD + ri], in[1 * count * FRI_FOLD + ri],
                        in[2 * count * FRI_FOLD + ri], in[3 * count * FRI_FOLD + ri]);
                tot += cur * f;
                cur *= r.mix;
            }
            for (size_t j = 0; j < 4; j++)
                ok = ok && out[count * j + idx] == tot.elems[j];
        }
        ck.expect(ok, "the last FRI fold differs");
    }
    printf("fri rounds: %zu, trees: %zu\n", rounds.size(), T);

    // The prover's buffers drop at the end of the proof.
    for (Buf<uint32_t> *b : {&positions, &groups_buf, &out_values, &out_digests})
        release(*b);
    release(trees_buf);
    release(last);
    for (Round *r : rounds) {
        release(r->merkle.nodes);
        release(r->evaluated);
        release(r->out);
        delete r;
    }
    release(final_coeffs);
    release(combos);
    pgs.push_back(check);
    for (PolyGroup *pg : pgs) {
        release(pg->merkle.nodes);
        release(pg->evaluated);
        release(pg->coeffs);
        delete pg;
    }
    CU(cuStreamDestroy(H.stream));
    CU(cuDevicePrimaryCtxRelease(H.dev));
    phase.print();
    return finish(dg, ck);
}
