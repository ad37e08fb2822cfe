// syncprobe.cu - cudart_app's pattern with slow kernels: work on the legacy
// stream, a device synchronize, work on a non-blocking stream, its stream
// synchronize, then 4-byte reads and one bulk read. Any missed wait shows as
// wrong values. Prints "syncprobe ok=1|0 ..." per round.
// Arguments: SPIN ROUNDS KERNELS LASTERR KIND (the wait after the stream's
// work: 0 cudaStreamSynchronize, 1 cuCtxSynchronize, 2 cuCtxSynchronize_v2,
// 3 cudaDeviceSynchronize, 4 cuStreamSynchronize). Build: nvcc -O2 ... -lcuda
#include <cstdio>
#include <cstdlib>
#include <cuda.h>
#include <cuda_runtime.h>

__global__ void add_slow(unsigned *p, unsigned n, unsigned v, long long spin)
{
    long long t0 = clock64();
    while (clock64() - t0 < spin) {
    }
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        p[i] += v * (i % 7 + 1);
}

int main(int argc, char **argv)
{
    long long spin = argc > 1 ? atoll(argv[1]) : 200000;
    int rounds_total = argc > 2 ? atoi(argv[2]) : 3;
    const unsigned n = 1 << 16, rounds = argc > 3 ? atoi(argv[3]) : 20;
    bool lasterr = argc > 4 && atoi(argv[4]);
    int kind = argc > 5 ? atoi(argv[5]) : 0; /* the wait after the stream's work */
    int bad = 0;
    for (int k = 0; k < rounds_total; k++) {
        unsigned *d;
        cudaMalloc(&d, n * sizeof *d);
        cudaMemset(d, 0, n * sizeof *d);
        for (unsigned r = 0; r < rounds; r++)
            add_slow<<<(n + 255) / 256, 256>>>(d, n, r, spin);
        if (lasterr)
            cudaGetLastError();
        cudaStream_t s;
        cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
        cudaDeviceSynchronize();
        for (unsigned r = 0; r < rounds; r++)
            add_slow<<<(n + 127) / 128, 128, 0, s>>>(d, n, 1, spin);
        switch (kind) {
        case 1: cuCtxSynchronize(); break;
        case 2: cuCtxSynchronize_v2(NULL); break;
        case 3: cudaDeviceSynchronize(); break;
        case 4: cuStreamSynchronize(s); break;
        default: cudaStreamSynchronize(s);
        }
        bool ok = true;
        unsigned firstbad = ~0u, got = 0;
        for (unsigned i = 0; i < 256; i++) {
            unsigned v;
            cudaMemcpy(&v, d + i, sizeof v, cudaMemcpyDeviceToHost);
            unsigned want = (i % 7 + 1) * (rounds * (rounds - 1) / 2 + rounds);
            if (v != want && ok)
                firstbad = i, got = v;
            ok = ok && v == want;
        }
        unsigned *h = (unsigned *)malloc(n * sizeof *h);
        cudaMemcpy(h, d, n * sizeof *h, cudaMemcpyDeviceToHost);
        unsigned nbad = 0;
        for (unsigned i = 0; i < n; i++)
            nbad += h[i] != (i % 7 + 1) * (rounds * (rounds - 1) / 2 + rounds);
        printf("syncprobe round %d: reads ok=%d (first bad %d got %u = %u units of %u) bulk bad=%u "
               "err=%d\n", k, ok, (int)firstbad, got, firstbad < 256 ? got / (firstbad % 7 + 1) : 0,
               rounds * (rounds - 1) / 2 + rounds, nbad, (int)cudaGetLastError());
        bad += !ok || nbad;
        free(h);
        cudaStreamDestroy(s);
        cudaFree(d);
    }
    printf("syncprobe ok=%d\n", !bad);
    return bad ? 1 : 0;
}
