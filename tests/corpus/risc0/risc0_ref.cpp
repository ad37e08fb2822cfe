// risc0_ref.cpp - the CPU reference of the two Merkle hashes the risc0 corpus
// driver checks, built for the host from risc0's own headers (carried tree):
//   sha-256:   risc0/sys/kernels/zkp/cuda/sha256.h (shaHash, shaHashPair) as is
//   poseidon2: risc0/sys/kernels/zkp/cuda/supra/poseidon2_constants.cuh's
//              constants, with the permutation of supra/poseidon2.cuh written out
//              here over risc0's Fp (fp.h), which has the same Montgomery words as
//              sppark's bb31_t that the kernels use.
#ifndef __host__
#define __host__
#endif
#ifndef __device__
#define __device__
#endif
#ifndef __constant__
#define __constant__
#endif

#include <cstddef>
#include <cstdint>

#include "cuda/fp.h"
#include "cuda/sha256.h"

namespace p2 {
typedef Fp fr_t;
#include "cuda/supra/poseidon2_constants.cuh"

const int CELLS = 24, ROUNDS_HALF_FULL = 4, ROUNDS_PARTIAL = 21, RATE = 16, OUT = 8;

static void m4(Fp x[4])
{
    Fp t0 = x[0] + x[1];
    Fp t1 = x[2] + x[3];
    Fp t2 = x[1] + x[1] + t1;
    Fp t3 = x[3] + x[3] + t0;
    Fp t4 = Fp(4) * t1 + t3;
    Fp t5 = Fp(4) * t0 + t2;
    Fp t6 = t3 + t5;
    Fp t7 = t2 + t4;
    x[0] = t6;
    x[1] = t5;
    x[2] = t7;
    x[3] = t4;
}

static void m_ext(Fp c[CELLS])
{
    Fp sums[4];
    for (int i = 0; i < CELLS / 4; i++) {
        m4(c + 4 * i);
        for (int j = 0; j < 4; j++)
            sums[j] += c[4 * i + j];
    }
    for (int i = 0; i < CELLS; i++)
        c[i] += sums[i % 4];
}

static void m_int(Fp c[CELLS])
{
    Fp sum;
    for (int i = 0; i < CELLS; i++)
        sum += c[i];
    for (int i = 0; i < CELLS; i++)
        c[i] = sum + M_INT_DIAG_HZN[i] * c[i];
}

static void mix(Fp c[CELLS])
{
    m_ext(c);
    int off = 0;
    for (int r = 0; r < 2 * ROUNDS_HALF_FULL + ROUNDS_PARTIAL; r++) {
        if (r < ROUNDS_HALF_FULL || r >= ROUNDS_HALF_FULL + ROUNDS_PARTIAL) {
            for (int i = 0; i < CELLS; i++)
                c[i] = pow(c[i] + ROUND_CONSTANTS[off + i], 7);
            m_ext(c);
            off += CELLS;
        } else {
            c[0] = pow(c[0] + ROUND_CONSTANTS[off], 7);
            m_int(c);
            off++;
        }
    }
}
} // namespace p2

// One row of `cols` raw words: absorb RATE words at a time (overwriting), zero-padded.
void ref_poseidon2_row(const uint32_t *vals, size_t cols, uint32_t out[8])
{
    Fp c[p2::CELLS];
    size_t i = 0;
    do {
        for (int j = 0; j < p2::RATE; j++, i++)
            c[j] = i < cols ? Fp::fromRaw(vals[i]) : Fp(0);
        p2::mix(c);
    } while (i < cols);
    for (int j = 0; j < p2::OUT; j++)
        out[j] = c[j].asRaw();
}

void ref_poseidon2_pair(const uint32_t a[8], const uint32_t b[8], uint32_t out[8])
{
    Fp c[p2::CELLS];
    for (int j = 0; j < 8; j++) {
        c[j] = Fp::fromRaw(a[j]);
        c[8 + j] = Fp::fromRaw(b[j]);
    }
    p2::mix(c);
    for (int j = 0; j < p2::OUT; j++)
        out[j] = c[j].asRaw();
}

// sha_rows hashes a row unpadded (sha.cu); sha_fold hashes a pair.
void ref_sha_row(const uint32_t *vals, size_t cols, uint32_t out[8])
{
    ShaDigest d = impl::shaHashInner(vals, cols, 1, false);
    for (int j = 0; j < 8; j++)
        out[j] = d.words[j];
}

void ref_sha_pair(const uint32_t a[8], const uint32_t b[8], uint32_t out[8])
{
    ShaDigest x, y;
    for (int j = 0; j < 8; j++) {
        x.words[j] = a[j];
        y.words[j] = b[j];
    }
    ShaDigest d = shaHashPair(x, y);
    for (int j = 0; j < 8; j++)
        out[j] = d.words[j];
}
