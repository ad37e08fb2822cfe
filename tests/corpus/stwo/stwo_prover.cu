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
// phase_ms: the proof's commitment, from the trace's upload to the last
// decommitted value (the twiddles before it are set-up, shared by proofs; the
// trace generation before and the checks after stay outside).
//
// usage: stwo [LOG2_ROWS 16..22 (20)] [COLUMNS (8)]
#include <algorithm>
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

int main(int argc, char **argv)
{
    const int log_n = arg_log(argc, argv, 1, 20, 16, 22);
    const int ncols = arg_log(argc, argv, 2, 8, 1, 64);
    const int log_blowup = 1, log_big = log_n + log_blowup;
    const size_t n = (size_t)1 << log_n, big = (size_t)1 << log_big;
    const int queries = 3;
    printf("stwo-gpu commitment: 2^%d rows x %d columns, blowup %d, %d queries\n", log_n, ncols,
           1 << log_blowup, queries);
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

    // MerkleProver::commit: the columns at the leaf layer, then one layer per size.
    std::vector<Blake2sHash *> layers(log_big + 1);
    std::vector<uint32_t *> none;
    layers[log_big] = commit_on_layer(big, ext, nullptr);
    for (int l = log_big - 1; l >= 0; l--)
        layers[l] = commit_on_layer((size_t)1 << l, none, layers[l + 1]);
    Blake2sHash root = to_vec(layers[0], 1)[0];
    dg.add(&root, sizeof root);

    // decommit: each queried column value and each sibling through at().
    std::vector<size_t> qs(queries);
    for (auto &q : qs)
        q = rng.below((uint32_t)big);
    for (int qi = 0; qi < queries; qi++) {
        size_t q = qs[qi];
        std::vector<uint32_t> row(ncols);
        for (int c = 0; c < ncols; c++)
            row[c] = to_vec(ext[c], big)[q];
        dg.add(row.data(), row.size() * 4);
        Blake2sHash cur = leaf_hash(row);
        size_t idx = q;
        for (int l = log_big; l > 0; l--) {
            Blake2sHash sib = to_vec(layers[l], (size_t)1 << l)[idx ^ 1];
            dg.add(&sib, sizeof sib);
            cur = (idx & 1) ? node_hash(sib, cur) : node_hash(cur, sib);
            idx >>= 1;
        }
        ck.expect(same(cur, root), "query %zu does not hash to the root", q);
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
    for (auto *l : layers)
        ST(cuda_free_memory(l));
    ST(cuda_free_memory(tw));
    ST(cuda_free_memory(itw));
    phase.print();
    return finish(dg, ck);
}
