// stwo_prover.cu - corpus driver for NethermindEth/stwo-gpu, the CUDA backend of
// StarkWare's stwo prover (Mersenne-31 circle STARKs), built from the carried
// cuda/src tree (relocatable device code, as its CMakeLists.txt builds it). It
// runs the commitment of a trace the way stwo drives the backend, through the
// same extern "C" entry points the Rust backend declares
// (stwo_gpu_backend/src/cuda/bindings.rs):
//   poly.rs            precompute_twiddles (+ batch_inverse_base_field for the
//                      inverse tree), new_canonical_ordered, interpolate_columns,
//                      evaluate_polynomials (extend: zeroed buffer + device copy,
//                      then evaluate_columns), evaluate, interpolate
//   cuda/base_field_vec.rs, blake_2s_hash_vec.rs  one cudaMalloc per vector,
//                      blocking cudaMemcpy in and out, cudaFree on drop; at(i)
//                      copies the whole vector to the host and indexes it
//   blake2s.rs         commit_on_layer for every layer: a result buffer, the
//                      column pointers copied to the device, the previous layer
//                      cloned, the kernel, the result copied back, the temporaries
//                      freed. Two departures, both from undefined behaviour in
//                      blake2s.rs: it copies device buffers through the host-to-device
//                      and device-to-host helpers, this driver through the
//                      device-to-device one (the same allocations and copies, the
//                      direction stated correctly); and a layer without columns gets
//                      no column-pointer copy (the helper would cudaMalloc 0 bytes,
//                      which need not set its uninitialised pointer, and later
//                      cudaFree that pointer)
// Each of the project's functions ends with cudaDeviceSynchronize on the legacy
// default stream (cuda/src/*.cu); the driver then checks cudaGetLastError.
//
// Checks on the CPU: twiddles times their inverses are one, evaluate(interpolate(v))
// is v on the trace domain (after the canonical ordering, recomputed here), the
// extended evaluations interpolate back to the coefficients padded with zeros,
// and each decommitted query hashes (blake2s compression of cuda/src/blake2s.cu,
// written out here) up to the committed root.
//
// With `proof`, the rest of a proof as stwo's prover::prove drives the backend
// (starkware-libs/stwo ce5b975, the revision stwo_gpu_backend/Cargo.toml pins:
// crates/prover/src/core/prover/mod.rs, pcs/prover.rs, fri.rs, vcs/prover.rs):
//   out-of-domain sample   eval_at_point of every column at a random point of the
//                          circle over QM31 (poly.rs; stwo's get_random_point)
//   quotients              accumulate_quotients over the extended columns, one
//                          sample batch (quotient.rs: the column pointers copied
//                          to the device, the sample vectors passed from the host)
//   FRI commitment         the quotients' four coordinate columns committed
//                          (FriFirstLayerProver), folded into a line
//                          (fold_circle_into_line into a zeroed layer), then each
//                          line layer committed and folded (fold_line, its output
//                          a SecureColumn made as new_with_size makes it: one
//                          allocation cloned three times) down to 2 values, read
//                          back with SecureColumn::to_cpu (fri.rs)
//   FRI decommitment       each queried pair of every layer through at(): four
//                          whole-column copies per value, the Merkle siblings
//                          through at() of whole hash layers (vcs/prover.rs)
// then the trace's decommitment as above. Departures: the trace has no AIR, so no
// composition polynomial is built or committed (stwo-gpu's constraint kernels are
// its examples'), and the proof of work, which stwo-gpu runs on the CPU
// (SimdBackend::grind), is left out. Checked on the CPU, with field arithmetic
// written here: each sample equals the polynomial's value there (columns 0 and
// last), every decommitted FRI value hashes to its layer's root, and every fold
// of a queried pair equals the next layer's value.
// build.sh mends one upstream race first (eval_at_point_first_pass's two shared
// arrays alias): unmended, this check failed on an H200 and the digest changed
// from run to run.
//
// phase_ms: the proof, from the trace's upload to the last decommitted value
// (the twiddles before it are set-up, shared by proofs; the trace generation
// before and the checks after stay outside).
//
// usage: stwo [LOG2_ROWS 16..22 (20)] [COLUMNS (8)] [commit|proof (commit)]
#include <algorithm>
#include <memory>
#include <vector>

#include "../common/corpus.h"

struct Point {
    uint32_t x, y;
};
struct Blake2sHash {
    uint32_t s[8];
};

extern "C" {
void copy_uint32_t_vec_from_device_to_host(uint32_t *, uint32_t *, int);
uint32_t *copy_uint32_t_vec_from_host_to_device(uint32_t *, int);
void copy_uint32_t_vec_from_device_to_device(uint32_t *, uint32_t *, int);
uint32_t *cuda_malloc_uint32_t(int);
Blake2sHash *cuda_malloc_blake_2s_hash(int);
uint32_t *cuda_alloc_zeroes_uint32_t(int);
void cuda_free_memory(void *);
void copy_blake_2s_hash_vec_from_device_to_host(Blake2sHash *, Blake2sHash *, uint32_t);
void copy_blake_2s_hash_vec_from_device_to_device(Blake2sHash *, Blake2sHash *, int);
uint32_t **copy_device_pointer_vec_from_host_to_device(uint32_t **, uint32_t);
void batch_inverse_base_field(uint32_t *, uint32_t *, int);
uint32_t *sort_values_and_permute_with_bit_reverse_order(uint32_t *, int);
uint32_t *precompute_twiddles(Point, Point, int);
void interpolate(int, uint32_t *, uint32_t *, int, int);
void interpolate_columns(int, uint32_t **, uint32_t *, int, int, int);
void evaluate(int, uint32_t *, uint32_t *, int, int);
void evaluate_columns(const int *, uint32_t **, uint32_t *, int, int, const int *);
void commit_on_first_layer(uint32_t, uint32_t, uint32_t **, Blake2sHash *);
void commit_on_layer_with_previous(uint32_t, uint32_t, uint32_t **, Blake2sHash *, Blake2sHash *);
}

// QM31 = CM31[u] / (u^2 - (2 + i)), CM31 = M31[i] / (i^2 + 1): cuda/include/fields.cuh's
// layout, passed by value as the backend's functions take it.
struct CM {
    uint32_t a, b;
};
struct QM {
    CM a, b;
};
struct SecurePoint {
    QM x, y;
};
extern "C" {
QM eval_at_point(uint32_t *, int, QM, QM);
void accumulate_quotients(uint32_t, uint32_t, uint32_t, uint32_t **, uint32_t, QM, SecurePoint *,
                          uint32_t *, uint32_t, QM *, uint32_t *, uint32_t, uint32_t *, uint32_t *,
                          uint32_t *, uint32_t *, uint32_t);
void fold_circle_into_line(uint32_t *, uint32_t, uint32_t, uint32_t **, QM, uint32_t **);
void fold_line(uint32_t *, uint32_t, uint32_t, uint32_t **, QM, uint32_t **);
}

// The project's functions print and carry on; the runtime keeps the error.
#define ST(call)                                                                          \
    do {                                                                                  \
        call;                                                                             \
        CK(cudaGetLastError());                                                           \
    } while (0)

static const uint32_t P = 0x7fffffffu;

static uint32_t m_add(uint32_t a, uint32_t b)
{
    uint32_t s = a + b;
    return s >= P ? s - P : s;
}
static uint32_t m_sub(uint32_t a, uint32_t b) { return a >= b ? a - b : a + P - b; }
static uint32_t m_mul(uint32_t a, uint32_t b) { return (uint32_t)(((uint64_t)a * b) % P); }
static uint32_t m_neg(uint32_t a) { return a ? P - a : 0; }
static uint32_t m_inv(uint32_t a) // a^(P-2)
{
    uint32_t r = 1;
    for (uint32_t e = P - 2; e; e >>= 1, a = m_mul(a, a))
        if (e & 1)
            r = m_mul(r, a);
    return r;
}
static CM c_add(CM x, CM y) { return {m_add(x.a, y.a), m_add(x.b, y.b)}; }
static CM c_sub(CM x, CM y) { return {m_sub(x.a, y.a), m_sub(x.b, y.b)}; }
static CM c_mul(CM x, CM y)
{
    return {m_sub(m_mul(x.a, y.a), m_mul(x.b, y.b)), m_add(m_mul(x.a, y.b), m_mul(x.b, y.a))};
}
static CM c_inv(CM x)
{
    uint32_t f = m_inv(m_add(m_mul(x.a, x.a), m_mul(x.b, x.b)));
    return {m_mul(x.a, f), m_mul(m_neg(x.b), f)};
}
static QM q_add(QM x, QM y) { return {c_add(x.a, y.a), c_add(x.b, y.b)}; }
static QM q_sub(QM x, QM y) { return {c_sub(x.a, y.a), c_sub(x.b, y.b)}; }
static QM q_mul(QM x, QM y) // (a + b u)(c + d u) = ac + (2 + i) bd + (ad + bc) u
{
    CM ac = c_mul(x.a, y.a), bd = c_mul(x.b, y.b);
    return {c_add(ac, c_mul({2, 1}, bd)), c_add(c_mul(x.a, y.b), c_mul(x.b, y.a))};
}
static QM q_scale(QM x, uint32_t k) { return {c_mul(x.a, {k, 0}), c_mul(x.b, {k, 0})}; }
static QM q_inv(QM x) // (a - b u) / (a^2 - (2 + i) b^2)
{
    CM d = c_inv(c_sub(c_mul(x.a, x.a), c_mul({2, 1}, c_mul(x.b, x.b))));
    return {c_mul(x.a, d), c_mul({m_neg(x.b.a), m_neg(x.b.b)}, d)};
}
static bool q_eq(QM x, QM y) { return !memcmp(&x, &y, sizeof x); }
static QM q_of(uint32_t m) { return {{m, 0}, {0, 0}}; }
static QM q_random(Rng &rng)
{
    return {{(uint32_t)(rng.next() % P), (uint32_t)(rng.next() % P)},
            {(uint32_t)(rng.next() % P), (uint32_t)(rng.next() % P)}};
}

// The circle group of M31 (cuda/include/point.cuh): generator of order 2^31.
static Point point_mul(Point a, Point b)
{
    return {m_sub(m_mul(a.x, b.x), m_mul(a.y, b.y)), m_add(m_mul(a.x, b.y), m_mul(a.y, b.x))};
}
static Point point_of_order_log(int log_n)
{
    Point r = {2, 1268011823};
    for (int i = 31 - log_n; i > 0; i--)
        r = point_mul(r, r);
    return r;
}

// cuda/src/blake2s.cu: zero state, no counter or flags.
static const uint32_t IV[8] = {0x6A09E667, 0xBB67AE85, 0x3C6EF372, 0xA54FF53A,
                               0x510E527F, 0x9B05688C, 0x1F83D9AB, 0x5BE0CD19};
static const unsigned char SIGMA[10][16] = {
    {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15},
    {14, 10, 4, 8, 9, 15, 13, 6, 1, 12, 0, 2, 11, 7, 5, 3},
    {11, 8, 12, 0, 5, 2, 15, 13, 10, 14, 3, 6, 7, 1, 9, 4},
    {7, 9, 3, 1, 13, 12, 11, 14, 2, 6, 5, 10, 4, 0, 15, 8},
    {9, 0, 5, 7, 2, 4, 10, 15, 14, 1, 11, 12, 6, 8, 3, 13},
    {2, 12, 6, 10, 0, 11, 8, 3, 4, 13, 7, 5, 15, 14, 1, 9},
    {12, 5, 1, 15, 14, 13, 4, 10, 0, 7, 6, 3, 9, 2, 8, 11},
    {13, 11, 7, 14, 12, 1, 3, 9, 5, 0, 15, 4, 8, 6, 2, 10},
    {6, 15, 14, 9, 11, 3, 0, 8, 12, 2, 13, 7, 1, 4, 10, 5},
    {10, 2, 8, 4, 7, 6, 1, 5, 15, 11, 9, 14, 3, 12, 13, 0}};

static uint32_t rotr(uint32_t x, int c) { return (x >> c) | (x << (32 - c)); }

static void g(int r, int i, uint32_t &a, uint32_t &b, uint32_t &c, uint32_t &d, const uint32_t m[16])
{
    a = a + b + m[SIGMA[r][2 * i]];
    d = rotr(d ^ a, 16);
    c = c + d;
    b = rotr(b ^ c, 12);
    a = a + b + m[SIGMA[r][2 * i + 1]];
    d = rotr(d ^ a, 8);
    c = c + d;
    b = rotr(b ^ c, 7);
}

static void compress(Blake2sHash &st, const uint32_t m[16])
{
    uint32_t v[16];
    for (int i = 0; i < 8; i++) {
        v[i] = st.s[i];
        v[8 + i] = IV[i];
    }
    for (int r = 0; r < 10; r++) {
        g(r, 0, v[0], v[4], v[8], v[12], m);
        g(r, 1, v[1], v[5], v[9], v[13], m);
        g(r, 2, v[2], v[6], v[10], v[14], m);
        g(r, 3, v[3], v[7], v[11], v[15], m);
        g(r, 4, v[0], v[5], v[10], v[15], m);
        g(r, 5, v[1], v[6], v[11], v[12], m);
        g(r, 6, v[2], v[7], v[8], v[13], m);
        g(r, 7, v[3], v[4], v[9], v[14], m);
    }
    for (int i = 0; i < 8; i++)
        st.s[i] ^= v[i] ^ v[8 + i];
}

static Blake2sHash leaf_hash(const std::vector<uint32_t> &row)
{
    Blake2sHash st = {};
    size_t c = 0;
    for (; c + 16 <= row.size(); c += 16)
        compress(st, &row[c]);
    if (c < row.size()) {
        uint32_t m[16] = {0};
        for (size_t j = 0; c < row.size(); c++, j++)
            m[j] = row[c];
        compress(st, m);
    }
    return st;
}

static Blake2sHash node_hash(const Blake2sHash &l, const Blake2sHash &r)
{
    Blake2sHash st = {};
    uint32_t m[16];
    for (int j = 0; j < 8; j++) {
        m[j] = l.s[j];
        m[8 + j] = r.s[j];
    }
    compress(st, m);
    return st;
}

static bool same(const Blake2sHash &a, const Blake2sHash &b) { return !memcmp(a.s, b.s, 32); }

static size_t bitrev(size_t i, int bits)
{
    size_t r = 0;
    for (int b = 0; b < bits; b++)
        r |= ((i >> b) & 1) << (bits - 1 - b);
    return r;
}

// BaseFieldVec / Blake2sHashVec: to_vec and at().
static std::vector<uint32_t> to_vec(uint32_t *d, size_t n)
{
    std::vector<uint32_t> v(n);
    ST(copy_uint32_t_vec_from_device_to_host(d, v.data(), (int)n));
    return v;
}
static std::vector<Blake2sHash> to_vec(Blake2sHash *d, size_t n)
{
    std::vector<Blake2sHash> v(n);
    ST(copy_blake_2s_hash_vec_from_device_to_host(d, v.data(), (uint32_t)n));
    return v;
}
// Column::at and Blake2sHashVec::at: the whole vector copied to a fresh host buffer
// (to_cpu: Vec::with_capacity, not zeroed) and one element taken.
static uint32_t at(uint32_t *d, size_t n, size_t i)
{
    std::unique_ptr<uint32_t[]> h(new uint32_t[n]);
    ST(copy_uint32_t_vec_from_device_to_host(d, h.get(), (int)n));
    return h[i];
}
static Blake2sHash at(Blake2sHash *d, size_t n, size_t i)
{
    std::unique_ptr<Blake2sHash[]> h(new Blake2sHash[n]);
    ST(copy_blake_2s_hash_vec_from_device_to_host(d, h.get(), (uint32_t)n));
    return h[i];
}
static uint32_t *clone(uint32_t *d, size_t n)
{
    uint32_t *c;
    ST(c = cuda_malloc_uint32_t((int)n));
    ST(copy_uint32_t_vec_from_device_to_device(d, c, (int)n));
    return c;
}

// blake2s.rs commit_on_layer / commit_on_layer_using_gpu.
static Blake2sHash *commit_on_layer(size_t size, std::vector<uint32_t *> &columns,
                                    Blake2sHash *prev)
{
    Blake2sHash *result, *d_result, *d_prev = nullptr;
    uint32_t **d_columns = nullptr;
    ST(result = cuda_malloc_blake_2s_hash((int)size));
    ST(d_result = cuda_malloc_blake_2s_hash((int)size));
    ST(copy_blake_2s_hash_vec_from_device_to_device(result, d_result, (int)size));
    if (!columns.empty())
        ST(d_columns = copy_device_pointer_vec_from_host_to_device(columns.data(),
                                                                   (uint32_t)columns.size()));
    if (prev) {
        ST(d_prev = cuda_malloc_blake_2s_hash((int)(size << 1)));
        ST(copy_blake_2s_hash_vec_from_device_to_device(prev, d_prev, (int)(size << 1)));
        ST(commit_on_layer_with_previous((uint32_t)size, (uint32_t)columns.size(), d_columns, d_prev,
                                         d_result));
        ST(cuda_free_memory(d_prev));
    } else {
        ST(commit_on_first_layer((uint32_t)size, (uint32_t)columns.size(), d_columns, d_result));
    }
    ST(copy_blake_2s_hash_vec_from_device_to_device(d_result, result, (int)size));
    ST(cuda_free_memory(d_result));
    if (d_columns)
        ST(cuda_free_memory(d_columns));
    return result;
}

// MerkleProver::commit: the columns at the leaf layer, then one layer per size.
static std::vector<Blake2sHash *> merkle_commit(std::vector<uint32_t *> &columns, int log_size)
{
    std::vector<Blake2sHash *> layers(log_size + 1);
    std::vector<uint32_t *> none;
    layers[log_size] = commit_on_layer((size_t)1 << log_size, columns, nullptr);
    for (int l = log_size - 1; l >= 0; l--)
        layers[l] = commit_on_layer((size_t)1 << l, none, layers[l + 1]);
    return layers;
}

// One leaf opened as stwo's decommit reads it: each column's value through at(),
// each sibling hash through at() of its layer; into the digest. True if it hashes
// to the root (layers[0]).
static bool open_leaf(const std::vector<Blake2sHash *> &layers, int log_size,
                      const std::vector<uint32_t *> &columns, size_t idx, std::vector<uint32_t> &row,
                      Digest &dg)
{
    const size_t n = (size_t)1 << log_size;
    row.resize(columns.size());
    for (size_t c = 0; c < columns.size(); c++)
        row[c] = at(columns[c], n, idx);
    dg.add(row.data(), row.size() * 4);
    Blake2sHash cur = leaf_hash(row);
    for (int l = log_size; l > 0; l--) {
        Blake2sHash sib = at(layers[l], (size_t)1 << l, idx ^ 1);
        dg.add(&sib, sizeof sib);
        cur = (idx & 1) ? node_hash(sib, cur) : node_hash(cur, sib);
        idx >>= 1;
    }
    return same(cur, at(layers[0], 1, 0));
}

static int log2_of(size_t n)
{
    int l = 0;
    while (((size_t)1 << l) < n)
        l++;
    return l;
}

// SecureColumnByCoords<CudaBackend> (stwo-gpu secure_column.rs): four coordinate columns.
static std::vector<uint32_t *> secure_zeros(size_t n)
{
    std::vector<uint32_t *> c(4);
    for (auto &p : c)
        ST(p = cuda_alloc_zeroes_uint32_t((int)n));
    return c;
}
static std::vector<uint32_t *> secure_new(size_t n) // new_with_size: one allocation, cloned
{
    uint32_t *c0;
    ST(c0 = cuda_malloc_uint32_t((int)n));
    return {c0, clone(c0, n), clone(c0, n), clone(c0, n)};
}
static std::vector<QM> secure_to_cpu(const std::vector<uint32_t *> &c, size_t n)
{
    std::vector<std::vector<uint32_t>> v(4);
    for (int k = 0; k < 4; k++) {
        uint32_t *t = clone(c[k], n);
        v[k] = to_vec(t, n);
        ST(cuda_free_memory(t));
    }
    std::vector<QM> r(n);
    for (size_t i = 0; i < n; i++)
        r[i] = {{v[0][i], v[1][i]}, {v[2][i], v[3][i]}};
    return r;
}
static void free_all(const std::vector<uint32_t *> &c)
{
    for (auto *p : c)
        ST(cuda_free_memory(p));
}
static void free_all(const std::vector<Blake2sHash *> &c)
{
    for (auto *p : c)
        ST(cuda_free_memory(p));
}

// The FRI prover's layers: cols[0] the quotients (a circle evaluation of the
// largest size), cols[1..] the line layers down to the last; trees[l] commits
// cols[l] (all but the last). circle_alpha folds cols[0] into cols[1];
// alpha[l - 1] folds cols[l] into cols[l + 1].
struct Fri {
    std::vector<std::vector<uint32_t *>> cols;
    std::vector<size_t> size;
    std::vector<std::vector<Blake2sHash *>> trees;
    QM circle_alpha;
    std::vector<QM> alpha;
    std::vector<QM> last;
};

// A queried pair's fold, checked on the CPU after the phase: layer l's values at
// 2i and 2i + 1 against layer l + 1's at i.
struct FoldCheck {
    size_t l, i;
    QM f0, f1, next;
};

static const size_t LAST_LAYER = 2; // FriConfig::new(0, 1, 3): a last layer of 2 values

// fri.rs FriProver::commit over the quotients' columns (ownership passes to fri).
static Fri fri_commit(std::vector<uint32_t *> quot, int log_big, uint32_t *itw, size_t tw_size,
                      Rng &rng, Digest &dg)
{
    Fri f;
    size_t m = (size_t)1 << log_big;
    f.cols.push_back(quot);
    f.size.push_back(m);
    f.trees.push_back(merkle_commit(f.cols[0], log_big));
    Blake2sHash r = at(f.trees[0][0], 1, 0);
    dg.add(&r, sizeof r);
    f.circle_alpha = q_random(rng);
    std::vector<uint32_t *> line = secure_zeros(m / 2);
    ST(fold_circle_into_line(itw, (uint32_t)(tw_size - m / 2), (uint32_t)m, quot.data(),
                             f.circle_alpha, line.data()));
    for (m /= 2;; m /= 2) {
        f.cols.push_back(line);
        f.size.push_back(m);
        if (m <= LAST_LAYER)
            break;
        f.trees.push_back(merkle_commit(line, log2_of(m)));
        r = at(f.trees.back()[0], 1, 0);
        dg.add(&r, sizeof r);
        f.alpha.push_back(q_random(rng));
        std::vector<uint32_t *> next = secure_new(m / 2);
        ST(fold_line(itw, (uint32_t)(tw_size - m), (uint32_t)m, line.data(), f.alpha.back(),
                     next.data()));
        line = next;
    }
    f.last = secure_to_cpu(line, m);
    dg.add(f.last.data(), f.last.size() * sizeof(QM));
    return f;
}

// fri.rs FriProver::decommit for one query of the largest domain: the queried
// pair of every committed layer opened; the folds kept for the check.
static bool fri_decommit(const Fri &f, size_t q, std::vector<FoldCheck> &folds, Digest &dg)
{
    bool ok = true;
    size_t p = q;
    for (size_t l = 0; l < f.trees.size(); l++, p >>= 1) {
        QM v[2];
        for (size_t s = 0; s < 2; s++) {
            std::vector<uint32_t> row;
            ok &= open_leaf(f.trees[l], log2_of(f.size[l]), f.cols[l], (p & ~(size_t)1) | s, row, dg);
            v[s] = {{row[0], row[1]}, {row[2], row[3]}};
        }
        if (l)
            folds.back().next = v[p & 1];
        folds.push_back({l, p >> 1, v[0], v[1], {}});
    }
    folds.back().next = f.last[p];
    return ok;
}

// The folds by the kernels' own formulas: f' = (f0 + f1) + alpha (f0 - f1) x^-1,
// x^-1 from the inverse twiddles as fold_line and (get_twiddle) fold_circle_into_line
// read them; the circle fold adds into a zeroed layer.
static bool fold_ok(const Fri &f, const FoldCheck &c, const std::vector<uint32_t> &it)
{
    uint32_t x_inv;
    QM alpha;
    if (c.l == 0) {
        size_t k = c.i >> 2;
        switch (c.i & 3) {
        case 0: x_inv = it[2 * k + 1]; break;
        case 1: x_inv = m_neg(it[2 * k + 1]); break;
        case 2: x_inv = m_neg(it[2 * k]); break;
        default: x_inv = it[2 * k]; break;
        }
        alpha = f.circle_alpha;
    } else {
        x_inv = it[c.i + (it.size() - f.size[c.l])];
        alpha = f.alpha[c.l - 1];
    }
    QM want = q_add(q_add(c.f0, c.f1), q_mul(alpha, q_scale(q_sub(c.f0, c.f1), x_inv)));
    return q_eq(want, c.next);
}

// eval_at_point's value computed here: the coefficients folded pairwise, the
// lowest bit by y, the next by x, each further one by 2x^2 - 1 of the one before.
static QM eval_here(const std::vector<uint32_t> &coef, SecurePoint pt)
{
    std::vector<QM> lv(coef.size() / 2);
    for (size_t i = 0; i < lv.size(); i++)
        lv[i] = q_add(q_of(coef[2 * i]), q_mul(q_of(coef[2 * i + 1]), pt.y));
    QM x = pt.x;
    for (size_t len = lv.size(), k = 0; len > 1; len /= 2, k++) {
        if (k)
            x = q_sub(q_scale(q_mul(x, x), 2), q_of(1));
        for (size_t i = 0; i < len / 2; i++)
            lv[i] = q_add(lv[2 * i], q_mul(lv[2 * i + 1], x));
    }
    return lv[0];
}

int main(int argc, char **argv)
{
    const int log_n = arg_log(argc, argv, 1, 20, 16, 22);
    const int ncols = arg_log(argc, argv, 2, 8, 1, 64);
    const int log_blowup = 1, log_big = log_n + log_blowup;
    const size_t n = (size_t)1 << log_n, big = (size_t)1 << log_big;
    const int queries = 3;
    const bool proof = argc > 3 && !strcmp(argv[3], "proof");
    if (argc > 3 && !proof && strcmp(argv[3], "commit")) {
        fprintf(stderr, "usage: %s [LOG2_ROWS] [COLUMNS] [commit|proof]\n", argv[0]);
        return 64;
    }
    printf("stwo-gpu %s: 2^%d rows x %d columns, blowup %d, %d queries\n",
           proof ? "proof" : "commitment", log_n, ncols, 1 << log_blowup, queries);
    fflush(stdout);

    Digest dg;
    Checks ck;
    Rng rng(0x57a2c0de);
    int count = 0;
    CK(cudaGetDeviceCount(&count));

    // Twiddle trees of the largest domain's half coset (CanonicCoset(log_big).half_coset():
    // initial point of order 2^(log_big+1), step of order 2^(log_big-1)).
    const int tw_size = (int)(big / 2);
    uint32_t *tw, *itw;
    ST(tw = precompute_twiddles(point_of_order_log(log_big + 1), point_of_order_log(log_big - 1),
                                tw_size));
    ST(itw = cuda_malloc_uint32_t(tw_size));
    ST(batch_inverse_base_field(tw, itw, tw_size));

    // The trace's host columns (the prover's witness, random here), before the clock.
    std::vector<std::vector<uint32_t>> host(ncols, std::vector<uint32_t>(n));
    for (int c = 0; c < ncols; c++)
        for (auto &x : host[c])
            x = (uint32_t)(rng.next() % P);

    // The proof by the clock: from the trace's upload to the last decommitted value.
    Phase phase;
    phase.begin();

    // The trace: from host columns into canonical order (new_canonical_ordered).
    std::vector<uint32_t *> cols(ncols);
    for (int c = 0; c < ncols; c++) {
        uint32_t *d;
        ST(d = copy_uint32_t_vec_from_host_to_device(host[c].data(), (int)n));
        ST(cols[c] = sort_values_and_permute_with_bit_reverse_order(d, (int)n));
        ST(cuda_free_memory(d));
    }
    // The values in that order, kept for the round trip.
    std::vector<uint32_t *> evals(ncols);
    for (int c = 0; c < ncols; c++)
        evals[c] = clone(cols[c], n);

    // interpolate_columns: in place, trace evaluations to coefficients.
    ST(interpolate_columns((int)(n / 2), cols.data(), itw, tw_size, ncols, (int)n));

    // evaluate_polynomials: extend each polynomial, evaluate them together.
    std::vector<uint32_t *> ext(ncols);
    std::vector<int> dom_sizes(ncols, (int)(big / 2)), col_sizes(ncols, (int)big);
    for (int c = 0; c < ncols; c++) {
        ST(ext[c] = cuda_alloc_zeroes_uint32_t((int)big));
        ST(copy_uint32_t_vec_from_device_to_device(cols[c], ext[c], (int)n));
    }
    ST(evaluate_columns(dom_sizes.data(), ext.data(), tw, tw_size, ncols, col_sizes.data()));

    std::vector<Blake2sHash *> layers = merkle_commit(ext, log_big);
    Blake2sHash root = at(layers[0], 1, 0);
    dg.add(&root, sizeof root);

    Fri fri;
    std::vector<FoldCheck> folds;
    SecurePoint oods = {};
    std::vector<QM> sampled(ncols);
    if (proof) {
        // The out-of-domain point (get_random_point: t drawn, (1 - t^2, 2t) / (1 + t^2))
        // and every column's value there.
        QM t = q_random(rng), t2 = q_mul(t, t), d = q_inv(q_add(q_of(1), t2));
        oods = {q_mul(q_sub(q_of(1), t2), d), q_mul(q_add(t, t), d)};
        for (int c = 0; c < ncols; c++)
            ST(sampled[c] = eval_at_point(cols[c], (int)n, oods.x, oods.y));
        dg.add(sampled.data(), sampled.size() * sizeof(QM));

        // compute_fri_quotients: one group (every column has the largest size), one batch.
        QM rc = q_random(rng);
        uint32_t **d_cols;
        ST(d_cols = copy_device_pointer_vec_from_host_to_device(ext.data(), (uint32_t)ncols));
        std::vector<uint32_t *> quot(4);
        for (auto &p : quot)
            ST(p = cuda_malloc_uint32_t((int)big));
        std::vector<uint32_t> index(ncols);
        for (int c = 0; c < ncols; c++)
            index[c] = (uint32_t)c;
        uint32_t batch = (uint32_t)ncols;
        ST(accumulate_quotients(1u << (30 - log_big), 1u << (32 - log_big), (uint32_t)big, d_cols,
                                (uint32_t)ncols, rc, &oods, index.data(), (uint32_t)ncols,
                                sampled.data(), &batch, 1, quot[0], quot[1], quot[2], quot[3],
                                (uint32_t)ncols * 3));
        ST(cuda_free_memory(d_cols));
        fri = fri_commit(quot, log_big, itw, (size_t)tw_size, rng, dg);
    }

    // decommit: the queries (of the largest domain) through FRI's layers, then the
    // trace's: each queried column value and each sibling through at().
    std::vector<size_t> qs(queries);
    for (auto &q : qs)
        q = rng.below((uint32_t)big);
    if (proof)
        for (size_t q : qs)
            ck.expect(fri_decommit(fri, q, folds, dg), "FRI query %zu does not hash to its roots", q);
    for (size_t q : qs) {
        std::vector<uint32_t> row;
        ck.expect(open_leaf(layers, log_big, ext, q, row, dg), "query %zu does not hash to the root",
                  q);
    }
    phase.end();

    // Outputs: twiddles, coefficients, extended evaluations.
    std::vector<uint32_t> t = to_vec(tw, tw_size), it = to_vec(itw, tw_size);
    dg.add(t.data(), t.size() * 4);
    dg.add(it.data(), it.size() * 4);
    bool inv_ok = true;
    for (int i = 0; i < tw_size; i++)
        inv_ok = inv_ok && m_mul(t[i], it[i]) == 1;
    ck.expect(inv_ok, "a twiddle times its inverse is not one");
    std::vector<std::vector<uint32_t>> coef(ncols);
    for (int c = 0; c < ncols; c++) {
        coef[c] = to_vec(cols[c], n);
        dg.add(coef[c].data(), n * 4);
        std::vector<uint32_t> e = to_vec(ext[c], big);
        dg.add(e.data(), big * 4);
    }

    // The samples and the folds, by the arithmetic written here.
    if (proof) {
        for (int c : {0, ncols - 1})
            ck.expect(q_eq(eval_here(coef[c], oods), sampled[c]),
                      "column %d: eval_at_point differs from the polynomial's value", c);
        for (const FoldCheck &f : folds)
            ck.expect(fold_ok(fri, f, it), "FRI layer %zu: the fold at %zu differs", f.l, f.i);
        for (auto &c : fri.cols)
            free_all(c);
        for (auto &t : fri.trees)
            free_all(t);
    }

    // evaluate(interpolate(v)) == v, with v in the canonical order computed here.
    for (int c : {0, ncols - 1}) {
        std::vector<uint32_t> sorted(n), want(n);
        for (size_t i = 0; i < n; i++)
            sorted[i] = i < n / 2 ? host[c][2 * i] : host[c][n - 2 * (i - n / 2) - 1];
        for (size_t i = 0; i < n; i++)
            want[i] = sorted[bitrev(i, log_n)];
        ck.expect(to_vec(evals[c], n) == want, "column %d: canonical ordering differs", c);
        uint32_t *p = clone(cols[c], n);
        ST(evaluate((int)(n / 2), p, tw, tw_size, (int)n));
        ck.expect(to_vec(p, n) == want, "column %d: evaluate(interpolate(v)) != v", c);
        ST(cuda_free_memory(p));

        // The extended evaluations come back to the coefficients and zeros.
        uint32_t *e = clone(ext[c], big);
        ST(interpolate((int)(big / 2), e, itw, tw_size, (int)big));
        std::vector<uint32_t> back = to_vec(e, big), pad(big, 0);
        std::copy(coef[c].begin(), coef[c].end(), pad.begin());
        ck.expect(back == pad, "column %d: the extension does not interpolate back", c);
        ST(cuda_free_memory(e));
    }

    for (int c = 0; c < ncols; c++) {
        ST(cuda_free_memory(cols[c]));
        ST(cuda_free_memory(evals[c]));
        ST(cuda_free_memory(ext[c]));
    }
    free_all(layers);
    ST(cuda_free_memory(tw));
    ST(cuda_free_memory(itw));
    phase.print();
    return finish(dg, ck);
}
