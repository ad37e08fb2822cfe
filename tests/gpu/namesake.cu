// namesake.cu - a program with kernels named like every original in the
// library's replacement table (kernels/table.txt: the bundled prover's
// kernels and public provers' ones, stwo-gpu's and RISC Zero's), with the
// same parameter types, so the same mangled names and parameter layouts, but
// other arithmetic. Nothing may replace them: each is
// launched three times (the library decides at a handle's second launch) and
// every value checked against the host. Buffers are sized as the prover's
// kernels would index them, so a wrong replacement gives wrong values, not a
// fault. Prints "namesake ok=1", or what differed and "namesake ok=0" (exit 1).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "check.cuh"

__global__ void ntt_layer(uint32_t *data, uint32_t n, uint32_t half, uint32_t root)
{
    uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        data[i] = data[i] * root + half;
}

__global__ void coset_shift(uint32_t *data, uint32_t n, uint32_t shift)
{
    uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        data[i] ^= shift * i;
}

__global__ void scale(uint32_t *data, uint32_t n, uint32_t factor)
{
    uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        data[i] = data[i] * factor + 1;
}

__global__ void bit_reverse(uint32_t *data, uint32_t n, uint32_t log_n)
{
    uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        data[i] = (data[i] << log_n) | (data[i] >> (32u - log_n));
}

__global__ void hash_leaves(const uint32_t *data, uint32_t *digests, uint32_t rows,
                            uint32_t width, uint32_t stride)
{
    uint32_t r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows)
        return;
    for (uint32_t d = 0; d < 8; d++) {
        uint32_t acc = 0;
        for (uint32_t c = 0; c < width; c++)
            acc += data[r + c * stride] * (d + c + 1);
        digests[(size_t)r * 8 + d] = acc;
    }
}

__global__ void hash_nodes(const uint32_t *children, uint32_t *parents, uint32_t count)
{
    uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= count)
        return;
    for (uint32_t d = 0; d < 8; d++)
        parents[(size_t)i * 8 + d] = children[(size_t)i * 16 + d] * 3 + children[(size_t)i * 16 + 8 + d];
}

__global__ void combine_columns(const uint32_t *lde, uint32_t *out, uint32_t n, uint32_t cols,
                                uint32_t alpha)
{
    uint32_t k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= n)
        return;
    uint32_t acc = 0;
    for (uint32_t c = 0; c < cols; c++)
        acc += lde[(size_t)c * n + k] * (alpha + c);
    out[k] = acc;
}

__global__ void fri_fold(const uint32_t *in, uint32_t *out, uint32_t half, uint32_t beta,
                         uint32_t shift_inv, uint32_t omega_inv)
{
    uint32_t j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j < half)
        out[j] = in[j] + in[j + half] * beta + shift_inv - omega_inv * j;
}

// stwo-gpu's field elements, as its kernels' parameters lay them out.
struct cm31 {
    uint32_t a, b;
};
struct qm31 {
    cm31 a, b;
};

// stwo-gpu's batched FFT layers and rescale: same names and parameter types
// (columns through an array of pointers), other arithmetic, one word each.
__global__ void batch_rfft_circle_part(uint32_t **values, uint32_t *tw, int cols, int rows)
{
    int i = blockIdx.y * blockDim.x + threadIdx.x;
    if (i < rows && (int)blockIdx.x < cols)
        values[blockIdx.x][i] = values[blockIdx.x][i] * 3u + tw[0];
}

__global__ void batch_rfft_line_part(uint32_t **values, uint32_t *tw, int cols, int rows,
                                     int offset, int layer)
{
    int i = blockIdx.y * blockDim.x + threadIdx.x;
    if (i < rows && (int)blockIdx.x < cols)
        values[blockIdx.x][i] ^= tw[offset] + (uint32_t)layer;
}

__global__ void batch_ifft_circle_part(uint32_t **values, uint32_t *tw, int cols, int rows)
{
    int i = blockIdx.y * blockDim.x + threadIdx.x;
    if (i < rows && (int)blockIdx.x < cols)
        values[blockIdx.x][i] = values[blockIdx.x][i] * 5u + tw[1];
}

__global__ void batch_ifft_line_part(uint32_t **values, uint32_t *tw, int cols, int rows, int layer)
{
    int i = blockIdx.y * blockDim.x + threadIdx.x;
    if (i < rows && (int)blockIdx.x < cols)
        values[blockIdx.x][i] += tw[2] * (uint32_t)layer;
}

__global__ void batch_rescale(uint32_t **values, int cols, int rows, uint32_t factor)
{
    int i = blockIdx.y * blockDim.x + threadIdx.x;
    if (i < rows && (int)blockIdx.x < cols)
        values[blockIdx.x][i] = values[blockIdx.x][i] * factor + 9u;
}

// RISC Zero's SHA-256 Merkle kernels: same names and parameter types (a
// 32-byte ShaDigest, a 4-byte Fp), other arithmetic: sums, not hashes.
struct ShaDigest {
    uint32_t words[8];
};
struct Fp {
    uint32_t val;
};

__global__ void sha_rows(ShaDigest *out, const Fp *matrix, uint32_t count, uint32_t colSize)
{
    uint32_t idx = blockDim.x * blockIdx.x + threadIdx.x;
    if (idx >= count)
        return;
    for (uint32_t d = 0; d < 8; d++) {
        uint32_t acc = d;
        for (uint32_t c = 0; c < colSize; c++)
            acc = acc * 31u + matrix[(size_t)c * count + idx].val;
        out[idx].words[d] = acc;
    }
}

__global__ void sha_fold(ShaDigest *out, const ShaDigest *in, uint32_t count)
{
    uint32_t idx = blockDim.x * blockIdx.x + threadIdx.x;
    if (idx < count)
        for (uint32_t d = 0; d < 8; d++)
            out[idx].words[d] = in[2 * idx].words[d] * 3u ^ in[2 * idx + 1].words[7 - d];
}

// stwo-gpu's quotient accumulation: the same name and parameter types (a
// qm31 by value, a column_sample_batch pointer, a cm31 pointer), other
// arithmetic: each row's words of every column summed into out0.
struct point_pair {
    qm31 x, y;
};
struct column_sample_batch {
    point_pair point;
    uint32_t *columns;
    qm31 *values;
    uint32_t size;
};

__global__ void accumulate_quotients_in_gpu(uint32_t first, uint32_t step, uint32_t domain_size,
                                            int log_size, uint32_t **columns, uint32_t ncols,
                                            qm31 coefficient, column_sample_batch *batches,
                                            uint32_t nbatches, uint32_t *out0, uint32_t *out1,
                                            uint32_t *out2, uint32_t *out3, qm31 *lines,
                                            uint32_t *sizes, qm31 *batch_coeffs, cm31 *inverses)
{
    uint32_t row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= domain_size)
        return;
    uint32_t s = first + coefficient.a.a;
    for (uint32_t c = 0; c < ncols; c++)
        s += columns[c][row];
    out0[row] = s, out1[row] = step, out2[row] = (uint32_t)log_size, out3[row] = nbatches;
}

static const uint32_t LOG_N = 14, N = 1u << LOG_N, ROWS = N / 8, WIDTH = 8, COLS = 4;
static const int ROUNDS = 3;
static int ok = 1;

static std::vector<uint32_t> pattern(size_t n, uint32_t salt)
{
    std::vector<uint32_t> v(n);
    for (size_t i = 0; i < n; i++)
        v[i] = (uint32_t)(i * 2654435761u) ^ (salt * 0x9e3779b9u) ^ (uint32_t)(i >> 3);
    return v;
}

static uint32_t *upload(const std::vector<uint32_t> &v)
{
    uint32_t *d;
    CK(cudaMalloc(&d, v.size() * 4));
    CK(cudaMemcpy(d, v.data(), v.size() * 4, cudaMemcpyHostToDevice));
    return d;
}

// The device's words against the host's: the first difference is reported.
static void compare(const char *kernel, int round, const uint32_t *dev,
                    const std::vector<uint32_t> &want)
{
    std::vector<uint32_t> got(want.size());
    CK(cudaMemcpy(got.data(), dev, want.size() * 4, cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < want.size(); i++)
        if (got[i] != want[i]) {
            printf("namesake: %s launch %d: word %zu is %u, the host says %u\n", kernel,
                   round + 1, i, got[i], want[i]);
            ok = 0;
            return;
        }
}

static dim3 grid_for(uint32_t threads)
{
    return dim3((threads + 255) / 256);
}

int main()
{
    skip_without_gpu();
    // In place: data[i] for i < N, three launches in a row.
    {
        std::vector<uint32_t> h = pattern(N, 1);
        uint32_t *d = upload(h);
        for (int r = 0; r < ROUNDS; r++) {
            ntt_layer<<<grid_for(N), 256>>>(d, N, N / 2, 5 + r);
            for (uint32_t i = 0; i < N; i++)
                h[i] = h[i] * (5 + r) + N / 2;
            compare("ntt_layer", r, d, h);
        }
        for (int r = 0; r < ROUNDS; r++) {
            coset_shift<<<grid_for(N), 256>>>(d, N, 7 + r);
            for (uint32_t i = 0; i < N; i++)
                h[i] ^= (7 + r) * i;
            compare("coset_shift", r, d, h);
        }
        for (int r = 0; r < ROUNDS; r++) {
            scale<<<grid_for(N), 256>>>(d, N, 3 + r);
            for (uint32_t i = 0; i < N; i++)
                h[i] = h[i] * (3 + r) + 1;
            compare("scale", r, d, h);
        }
        for (int r = 0; r < ROUNDS; r++) {
            bit_reverse<<<grid_for(N), 256>>>(d, N, LOG_N);
            for (uint32_t i = 0; i < N; i++)
                h[i] = (h[i] << LOG_N) | (h[i] >> (32 - LOG_N));
            compare("bit_reverse", r, d, h);
        }
        CK(cudaFree(d));
    }
    // From one array to another.
    {
        std::vector<uint32_t> in = pattern((size_t)ROWS * WIDTH, 2), want((size_t)ROWS * 8);
        for (uint32_t r = 0; r < ROWS; r++)
            for (uint32_t d = 0; d < 8; d++) {
                uint32_t acc = 0;
                for (uint32_t c = 0; c < WIDTH; c++)
                    acc += in[r + c * ROWS] * (d + c + 1);
                want[(size_t)r * 8 + d] = acc;
            }
        uint32_t *din = upload(in), *dout = upload(std::vector<uint32_t>(want.size()));
        for (int r = 0; r < ROUNDS; r++) {
            hash_leaves<<<grid_for(ROWS), 256>>>(din, dout, ROWS, WIDTH, ROWS);
            compare("hash_leaves", r, dout, want);
        }
        CK(cudaFree(din));
        CK(cudaFree(dout));
    }
    {
        const uint32_t count = N / 16;
        std::vector<uint32_t> in = pattern((size_t)count * 16, 3), want((size_t)count * 8);
        for (uint32_t i = 0; i < count; i++)
            for (uint32_t d = 0; d < 8; d++)
                want[(size_t)i * 8 + d] = in[(size_t)i * 16 + d] * 3 + in[(size_t)i * 16 + 8 + d];
        uint32_t *din = upload(in), *dout = upload(std::vector<uint32_t>(want.size()));
        for (int r = 0; r < ROUNDS; r++) {
            hash_nodes<<<grid_for(count), 256>>>(din, dout, count);
            compare("hash_nodes", r, dout, want);
        }
        CK(cudaFree(din));
        CK(cudaFree(dout));
    }
    {
        std::vector<uint32_t> lde = pattern((size_t)N * COLS, 4), want(N);
        for (uint32_t k = 0; k < N; k++) {
            uint32_t acc = 0;
            for (uint32_t c = 0; c < COLS; c++)
                acc += lde[(size_t)c * N + k] * (11 + c);
            want[k] = acc;
        }
        uint32_t *din = upload(lde), *dout = upload(std::vector<uint32_t>(N));
        for (int r = 0; r < ROUNDS; r++) {
            combine_columns<<<grid_for(N), 256>>>(din, dout, N, COLS, 11);
            compare("combine_columns", r, dout, want);
        }
        CK(cudaFree(din));
        CK(cudaFree(dout));
    }
    {
        const uint32_t half = N / 2;
        std::vector<uint32_t> in = pattern(N, 5), want(half);
        for (uint32_t j = 0; j < half; j++)
            want[j] = in[j] + in[j + half] * 13 + 17 - 19 * j;
        uint32_t *din = upload(in), *dout = upload(std::vector<uint32_t>(half));
        for (int r = 0; r < ROUNDS; r++) {
            fri_fold<<<grid_for(half), 256>>>(din, dout, half, 13, 17, 19);
            compare("fri_fold", r, dout, want);
        }
        CK(cudaFree(din));
        CK(cudaFree(dout));
    }
    {
        // stwo's batched launches: 4 columns of N words, grid (columns, N / 1024).
        const int cols = 4;
        std::vector<std::vector<uint32_t>> h(cols);
        std::vector<uint32_t *> d(cols);
        for (int c = 0; c < cols; c++)
            h[c] = pattern(N, 8 + c), d[c] = upload(h[c]);
        std::vector<uint32_t> tw = pattern(64, 12);
        uint32_t *dtw = upload(tw), **dcols;
        CK(cudaMalloc(&dcols, cols * sizeof(uint32_t *)));
        CK(cudaMemcpy(dcols, d.data(), cols * sizeof(uint32_t *), cudaMemcpyHostToDevice));
        dim3 grid(cols, (N + 1023) / 1024);
        for (int r = 0; r < ROUNDS; r++) {
            batch_rfft_circle_part<<<grid, 1024>>>(dcols, dtw, cols, (int)N);
            batch_rfft_line_part<<<grid, 1024>>>(dcols, dtw, cols, (int)N, 5, r + 1);
            batch_ifft_circle_part<<<grid, 1024>>>(dcols, dtw, cols, (int)N);
            batch_ifft_line_part<<<grid, 1024>>>(dcols, dtw, cols, (int)N, r + 2);
            batch_rescale<<<grid, 1024>>>(dcols, cols, (int)N, 7u + r);
            for (int c = 0; c < cols; c++) {
                for (uint32_t i = 0; i < N; i++) {
                    uint32_t v = h[c][i] * 3u + tw[0];
                    v ^= tw[5] + (uint32_t)(r + 1);
                    v = v * 5u + tw[1];
                    v += tw[2] * (uint32_t)(r + 2);
                    h[c][i] = v * (7u + r) + 9u;
                }
                compare("batch_fft", r, d[c], h[c]);
            }
        }
        for (int c = 0; c < cols; c++)
            CK(cudaFree(d[c]));
        CK(cudaFree(dtw));
        CK(cudaFree(dcols));
    }
    {
        // RISC Zero's launches: rows of a column-major matrix (256-thread
        // blocks), then one fold of the row digests.
        const uint32_t rows = N / 16, cols = 16;
        std::vector<uint32_t> m = pattern((size_t)rows * cols, 13);
        std::vector<uint32_t> digests((size_t)rows * 8), folded((size_t)rows / 2 * 8);
        for (uint32_t r = 0; r < rows; r++)
            for (uint32_t d = 0; d < 8; d++) {
                uint32_t acc = d;
                for (uint32_t c = 0; c < cols; c++)
                    acc = acc * 31u + m[(size_t)c * rows + r];
                digests[(size_t)r * 8 + d] = acc;
            }
        for (uint32_t i = 0; i < rows / 2; i++)
            for (uint32_t d = 0; d < 8; d++)
                folded[(size_t)i * 8 + d] =
                    digests[(size_t)2 * i * 8 + d] * 3u ^ digests[(size_t)(2 * i + 1) * 8 + 7 - d];
        uint32_t *dm = upload(m), *dd = upload(std::vector<uint32_t>(digests.size())),
                 *df = upload(std::vector<uint32_t>(folded.size()));
        for (int r = 0; r < ROUNDS; r++) {
            sha_rows<<<grid_for(rows), 256>>>((ShaDigest *)dd, (const Fp *)dm, rows, cols);
            compare("sha_rows", r, dd, digests);
            sha_fold<<<grid_for(rows / 2), 256>>>((ShaDigest *)df, (const ShaDigest *)dd, rows / 2);
            compare("sha_fold", r, df, folded);
        }
        CK(cudaFree(dm));
        CK(cudaFree(dd));
        CK(cudaFree(df));
    }
    {
        // stwo's launch: 512-thread blocks over the domain, two columns.
        std::vector<uint32_t> c0 = pattern(N, 14), c1 = pattern(N, 15), want(N);
        for (uint32_t i = 0; i < N; i++)
            want[i] = 5u + 9u + c0[i] + c1[i];
        uint32_t *d0 = upload(c0), *d1 = upload(c1), **dcols, *out[4];
        uint32_t *hc[2] = {d0, d1};
        CK(cudaMalloc(&dcols, sizeof hc));
        CK(cudaMemcpy(dcols, hc, sizeof hc, cudaMemcpyHostToDevice));
        for (int k = 0; k < 4; k++)
            out[k] = upload(std::vector<uint32_t>(N));
        qm31 coefficient = {{9, 0}, {0, 0}};
        for (int r = 0; r < ROUNDS; r++) {
            accumulate_quotients_in_gpu<<<(N + 511) / 512, 512>>>(5, 6, N, (int)LOG_N, dcols, 2,
                                                                coefficient, NULL, 0, out[0],
                                                                out[1], out[2], out[3], NULL,
                                                                NULL, NULL, NULL);
            compare("accumulate_quotients", r, out[0], want);
        }
        for (int k = 0; k < 4; k++)
            CK(cudaFree(out[k]));
        CK(cudaFree(d0));
        CK(cudaFree(d1));
        CK(cudaFree(dcols));
    }
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    printf("namesake ok=%d\n", ok);
    return ok ? 0 : 1;
}
