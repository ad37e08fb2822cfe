/* risc0_kernels.cu - replacements for RISC Zero's SHA-256 Merkle kernels
 * (risc0/sys/kernels/zkp/cuda/sha.cu and sha256.h, commit 3bbcd44), built
 * into the fatbin the library embeds beside prover_kernels.cu.
 *
 * Owns: ga_risc0_sha_rows and ga_risc0_sha_fold, with exactly the parameter
 * lists of sha_rows(ShaDigest *out, const Fp *matrix, uint32_t count,
 * uint32_t colSize) and sha_fold(ShaDigest *out, const ShaDigest *in,
 * uint32_t count), and a SHA-256 compression kept in registers.
 * Must never: change an output word for any input, nor write a word the
 * original does not (kernels/verify_public.cu loads the originals from the
 * program that carries them and compares bit for bit).
 *
 * What the originals do: sha_rows hashes row idx of a column-major matrix
 * (colSize words at stride count, each byte-swapped, 16 to a block, the last
 * block zero-filled, no length padding) and stores the byte-swapped state;
 * sha_fold compresses the byte-swapped words of two digests once from the
 * initial state. Their compression declares the 64 round constants and the
 * 64-word schedule as local arrays: a 512-576 byte stack frame that every
 * compression fills and reads through local memory.
 *
 * Why these are faster: the 64 rounds are unrolled with the constants as
 * immediates and the schedule as a 16-word window in registers (no stack),
 * rotations are funnel shifts, byte swaps one PRMT, sha_fold's digests move
 * as 16-byte vectors where aligned.
 *
 * Why the output is the same: SHA-256's compression is one function of the
 * state and the block; both compute it (the same additions modulo 2^32 and
 * the same boolean functions, in another instruction order) on the same
 * blocks, formed from the same words in the same order, and swap the bytes of
 * the same words. Launch contract (grid=program): indexed as the originals
 * (blockDim.x * blockIdx.x + threadIdx.x, below count), so any launch gives
 * the original's result. */
#include <stdint.h>

#include "grid.cuh" /* ga_aligned16 */

namespace ga_risc0 {

__device__ __forceinline__ uint32_t rotr(uint32_t x, unsigned n)
{
    return __funnelshift_r(x, x, n);
}

/* sha256.h's convertU32: the word's bytes reversed. */
__device__ __forceinline__ uint32_t bswap(uint32_t x)
{
    return __byte_perm(x, 0, 0x0123);
}

/* One SHA-256 compression of block w (clobbered: the schedule) into s. */
__device__ __forceinline__ void compress(uint32_t s[8], uint32_t w[16])
{
    const uint32_t K[64] = {
        0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4,
        0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe,
        0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f,
        0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7,
        0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc,
        0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
        0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116,
        0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
        0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
        0xc67178f2};
    uint32_t a = s[0], b = s[1], c = s[2], d = s[3], e = s[4], f = s[5], g = s[6], h = s[7];
#pragma unroll
    for (int i = 0; i < 64; i++) {
        uint32_t wi = w[i & 15];
        if (i >= 16) {
            uint32_t w2 = w[(i - 2) & 15], w15 = w[(i - 15) & 15];
            wi += (rotr(w2, 17) ^ rotr(w2, 19) ^ (w2 >> 10)) + w[(i - 7) & 15] +
                  (rotr(w15, 7) ^ rotr(w15, 18) ^ (w15 >> 3));
            w[i & 15] = wi;
        }
        uint32_t t1 = h + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) + K[i] + wi;
        uint32_t t2 = (rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
        h = g, g = f, f = e, e = d + t1, d = c, c = b, b = a, a = t1 + t2;
    }
    s[0] += a, s[1] += b, s[2] += c, s[3] += d, s[4] += e, s[5] += f, s[6] += g, s[7] += h;
}

__device__ __forceinline__ void init(uint32_t s[8])
{
    s[0] = 0x6a09e667, s[1] = 0xbb67ae85, s[2] = 0x3c6ef372, s[3] = 0xa54ff53a;
    s[4] = 0x510e527f, s[5] = 0x9b05688c, s[6] = 0x1f83d9ab, s[7] = 0x5be0cd19;
}

/* The byte-swapped state as the digest, 16-byte stores where aligned. */
__device__ __forceinline__ void store_digest(uint32_t *out, const uint32_t s[8])
{
    if (ga_aligned16(out)) {
        ((uint4 *)out)[0] = make_uint4(bswap(s[0]), bswap(s[1]), bswap(s[2]), bswap(s[3]));
        ((uint4 *)out)[1] = make_uint4(bswap(s[4]), bswap(s[5]), bswap(s[6]), bswap(s[7]));
        return;
    }
#pragma unroll
    for (int i = 0; i < 8; i++)
        out[i] = bswap(s[i]);
}

} /* namespace ga_risc0 */

/* sha_rows(ShaDigest *out, const Fp *matrix, uint32_t count, uint32_t colSize):
 * shaHash(matrix + idx, colSize, count, false) per row. */
extern "C" __global__ void __launch_bounds__(1024)
ga_risc0_sha_rows(uint32_t *out, const uint32_t *matrix, uint32_t count, uint32_t colSize)
{
    using namespace ga_risc0;
    uint32_t idx = blockDim.x * blockIdx.x + threadIdx.x;
    if (idx >= count)
        return;
    const uint32_t *row = matrix + idx;
    uint32_t s[8], w[16];
    init(s);
    uint32_t i = 0;
    for (; i + 16 <= colSize; i += 16) {
#pragma unroll
        for (int j = 0; j < 16; j++)
            w[j] = bswap(row[(size_t)(i + j) * count]);
        compress(s, w);
    }
    if (i < colSize) { /* the last block, zero-filled; no length: sha_rows does not pad */
#pragma unroll
        for (int j = 0; j < 16; j++)
            w[j] = i + j < colSize ? bswap(row[(size_t)(i + j) * count]) : 0u;
        compress(s, w);
    }
    store_digest(out + (size_t)idx * 8, s);
}

/* sha_fold(ShaDigest *out, const ShaDigest *in, uint32_t count):
 * shaHashPair(in[2 idx], in[2 idx + 1]). */
extern "C" __global__ void __launch_bounds__(1024)
ga_risc0_sha_fold(uint32_t *out, const uint32_t *in, uint32_t count)
{
    using namespace ga_risc0;
    uint32_t idx = blockDim.x * blockIdx.x + threadIdx.x;
    if (idx >= count)
        return;
    const uint32_t *pair = in + (size_t)idx * 16;
    uint32_t s[8], w[16];
    if (ga_aligned16(pair)) {
#pragma unroll
        for (int q = 0; q < 4; q++) {
            uint4 v = ((const uint4 *)pair)[q];
            w[4 * q] = bswap(v.x), w[4 * q + 1] = bswap(v.y);
            w[4 * q + 2] = bswap(v.z), w[4 * q + 3] = bswap(v.w);
        }
    } else {
#pragma unroll
        for (int j = 0; j < 16; j++)
            w[j] = bswap(pair[j]);
    }
    init(s);
    compress(s, w);
    store_digest(out + (size_t)idx * 8, s);
}
