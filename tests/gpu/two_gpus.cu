// two_gpus.cu - one process using two GPUs, switching the current device
// between every call: allocations, launches, small reads and frees on each
// (a scratch block a round, reused by the pool on its own device), checked
// against the host's arithmetic ("two_gpus"). Then the pinned and pool caches
// with both devices' blocks in one process, the device switched per call:
//   pinned  cudaMallocHost/cudaFreeHost churn from both devices (sizes that
//           repeat, so a cache hands blocks back; some freed with the other
//           device current), each block the target of one device's copy and
//           the source of the other's, every word checked
//   async   cudaMallocAsync/cudaFreeAsync on each device's own stream, the
//           block written by a kernel, copied out on that stream, freed while
//           the copy may still run, its device checked; every value checked
// One line a check ("NAME ok=0|1"); exits 1 when any fails.
#include <cstdio>
#include <cstring>

#include "check.cuh"

__global__ void scale(unsigned *p, unsigned n, unsigned k)
{
    for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        p[i] = p[i] * k + 1;
}

__global__ void fill(unsigned *p, unsigned n, unsigned salt)
{
    for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        p[i] = i * 2654435761u ^ salt;
}

static unsigned expect(unsigned i, unsigned salt) { return i * 2654435761u ^ salt; }

// Pinned blocks allocated with one device current or the other, in sizes
// that come back round after round; each filled by a copy from device d,
// copied to device 1 - d, read back from there; some freed with the other
// device current (UVA: cudaMallocHost memory is portable).
static int pinned(unsigned *dev[2])
{
    const unsigned sizes[4] = {4096, 65536, 3 * 4096 + 4, 1 << 20};
    int ok = 1;
    for (int round = 0; round < 64; round++) {
        for (int d = 0; d < 2; d++) {
            unsigned words = sizes[(round + d) % 4] / 4, salt = round * 2 + d;
            unsigned *h;
            CK(cudaSetDevice(d));
            CK(cudaMallocHost(&h, words * 4));
            fill<<<64, 256>>>(dev[d], words, salt);
            CK(cudaMemcpy(h, dev[d], words * 4, cudaMemcpyDeviceToHost));
            for (unsigned i = 0; i < words; i += 61)
                ok &= h[i] == expect(i, salt);
            ok &= h[words - 1] == expect(words - 1, salt);
            CK(cudaSetDevice(1 - d)); // the other device reads the block
            CK(cudaMemcpy(dev[1 - d], h, words * 4, cudaMemcpyHostToDevice));
            memset(h, 0, words * 4);
            CK(cudaMemcpy(h, dev[1 - d], words * 4, cudaMemcpyDeviceToHost));
            for (unsigned i = 0; i < words; i += 59)
                ok &= h[i] == expect(i, salt);
            if (round % 3 != 0) // freed with its own device current, else the other's
                CK(cudaSetDevice(d));
            CK(cudaFreeHost(h));
        }
    }
    return ok;
}

// Stream-ordered blocks on each device's own stream, devices alternating
// call by call; a block freed on its stream right after the copy that reads
// it is queued (the copy still runs), so a reused block must wait for it.
static int async_blocks(cudaStream_t s[2])
{
    const unsigned words = 1 << 16;
    unsigned *h[2];
    int ok = 1;
    for (int d = 0; d < 2; d++) {
        CK(cudaSetDevice(d));
        CK(cudaMallocHost(&h[d], words * 4));
    }
    for (int round = 0; round < 100; round++) {
        unsigned *p[2];
        unsigned n = words >> (round % 4);
        for (int d = 0; d < 2; d++) {
            CK(cudaSetDevice(d));
            CK(cudaMallocAsync(&p[d], n * 4, s[d]));
        }
        for (int d = 0; d < 2; d++) {
            CK(cudaSetDevice(d));
            fill<<<64, 256, 0, s[d]>>>(p[d], n, round * 2 + d);
            CK(cudaMemcpyAsync(h[d], p[d], n * 4, cudaMemcpyDeviceToHost, s[d]));
            CK(cudaFreeAsync(p[d], s[d]));
        }
        for (int d = 0; d < 2; d++) {
            CK(cudaSetDevice(d));
            CK(cudaStreamSynchronize(s[d]));
            for (unsigned i = round % 7; i < n; i += 101)
                ok &= h[d][i] == expect(i, round * 2 + d);
            ok &= h[d][n - 1] == expect(n - 1, round * 2 + d);
        }
        if (round % 10 == 0) // a block kept across calls: its device is its own
            for (int d = 0; d < 2; d++) {
                unsigned *q;
                cudaPointerAttributes a;
                CK(cudaSetDevice(d));
                CK(cudaMallocAsync(&q, 4096, s[d]));
                CK(cudaStreamSynchronize(s[d]));
                CK(cudaSetDevice(1 - d));
                CK(cudaPointerGetAttributes(&a, q));
                ok &= a.device == d;
                CK(cudaSetDevice(d));
                CK(cudaFreeAsync(q, s[d]));
            }
    }
    for (int d = 0; d < 2; d++) {
        CK(cudaSetDevice(d));
        CK(cudaStreamSynchronize(s[d]));
        CK(cudaFreeHost(h[d]));
    }
    return ok;
}

int main()
{
    skip_without_gpu();
    int count = 0;
    CK(cudaGetDeviceCount(&count));
    if (count < 2) {
        fprintf(stderr, "SKIP: fewer than two GPUs (%d)\n", count);
        return 77;
    }
    const unsigned n = 1 << 16;
    unsigned *buf[2];
    unsigned model = 0;
    int ok = 1;
    for (int d = 0; d < 2; d++) {
        CK(cudaSetDevice(d));
        CK(cudaMalloc(&buf[d], n * 4));
        CK(cudaMemset(buf[d], 0, n * 4));
    }
    for (int round = 0; round < 200; round++) {
        unsigned k = 3 + round % 5;
        for (int d = 0; d < 2; d++) { // the same work on both, devices switched per call
            CK(cudaSetDevice(d));
            scale<<<32, 256>>>(buf[d], n, k);
        }
        model = model * k + 1;
        for (int d = 0; d < 2; d++) {
            CK(cudaSetDevice(d));
            unsigned v;
            CK(cudaMemcpy(&v, buf[d] + (round * 97) % n, 4, cudaMemcpyDeviceToHost));
            ok &= v == model;
        }
        // Scratch of one size on each device every round: under the pool a
        // freed block comes back, and must come back on its own device only,
        // holding what this round wrote (the last kernel still runs at free).
        for (int d = 0; d < 2; d++) {
            CK(cudaSetDevice(d));
            unsigned *s, v;
            cudaPointerAttributes a;
            CK(cudaMalloc(&s, n * 4));
            CK(cudaPointerGetAttributes(&a, s));
            ok &= a.device == d;
            CK(cudaMemcpy(s, buf[d], n * 4, cudaMemcpyDeviceToDevice));
            scale<<<32, 256>>>(s, n, 2);
            CK(cudaMemcpy(&v, s + (round * 31) % n, 4, cudaMemcpyDeviceToHost));
            ok &= v == model * 2 + 1;
            scale<<<32, 256>>>(s, n, 5);
            CK(cudaFree(s));
        }
        if (round % 50 == 49) // churn on each device
            for (int d = 0; d < 2; d++) {
                CK(cudaSetDevice(d));
                unsigned *tmp;
                CK(cudaMalloc(&tmp, (1 + round) * 4096));
                CK(cudaFree(tmp));
            }
    }
    for (int d = 0; d < 2; d++) {
        CK(cudaSetDevice(d));
        CK(cudaFree(buf[d]));
    }
    printf("two_gpus ok=%d\n", verdict(ok));
    unsigned *dev[2];
    cudaStream_t s[2];
    for (int d = 0; d < 2; d++) {
        CK(cudaSetDevice(d));
        CK(cudaMalloc(&dev[d], 1 << 20));
        CK(cudaStreamCreateWithFlags(&s[d], cudaStreamNonBlocking));
    }
    printf("pinned ok=%d\n", verdict(pinned(dev)));
    printf("async ok=%d\n", verdict(async_blocks(s)));
    for (int d = 0; d < 2; d++) {
        CK(cudaSetDevice(d));
        CK(cudaStreamDestroy(s[d]));
        CK(cudaFree(dev[d]));
    }
    return verdicts();
}
