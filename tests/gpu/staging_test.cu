// staging_test.cu - large copies between pageable host memory and the device,
// as GPUACCEL_STAGING serves them, checked byte by byte against copies
// through page-locked memory (which the library never stages): random data,
// sizes around the threshold tests/gpu/staging.sh sets (1 MiB) and around the
// chunk ramp (1, 2, 4, 8 MiB pieces; 15 MiB fills the ring), unaligned host
// pointers, both directions, through cudart (cudaMemcpy, cudaMemcpyAsync on a
// created stream and on the default one) and the driver API (cuMemcpyHtoD,
// cuMemcpyDtoH, their Async forms); stream order (a copy after a kernel on the
// same stream sees or overwrites what it wrote); copies past the end of an
// allocation (their codes printed; ok=1 when nothing was copied); several
// threads at once. One "... ok=0|1" line per check; exits 1 when any fails.
// Built twice: as is, and with --default-stream per-thread (the _ptds/_ptsz
// entry points). The output must be the same natively and under the library.
// usage: staging_test [THREADS]
#include <cuda.h>
#include <cuda_runtime.h>
#include <pthread.h>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include "check.cuh"

static const size_t MiB = 1 << 20;
static const size_t MAXN = 72 * MiB;

enum { RT_SYNC, RT_ASYNC_STREAM, RT_ASYNC_DEFAULT, DRV_SYNC, DRV_ASYNC, N_APIS };
static const char *const api_names[] = {"cudaMemcpy", "cudaMemcpyAsync-stream",
                                        "cudaMemcpyAsync-default", "cuMemcpy", "cuMemcpyAsync"};

static void fill(unsigned char *p, size_t n, uint64_t *st)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        *st ^= *st << 13, *st ^= *st >> 7, *st ^= *st << 17;
        memcpy(p + i, st, 8);
    }
    for (; i < n; i++) {
        *st ^= *st << 13, *st ^= *st >> 7, *st ^= *st << 17;
        p[i] = (unsigned char)*st;
    }
}

// A copy through api; a synchronous wait of the stream for the async forms
// (the library's device-to-host copy is complete on return anyway; the
// host-to-device one needs the wait before the check reads the device).
static int htod(int api, void *d, const void *h, size_t n, cudaStream_t s)
{
    switch (api) {
    case RT_SYNC: return (int)cudaMemcpy(d, h, n, cudaMemcpyHostToDevice);
    case RT_ASYNC_STREAM: return (int)cudaMemcpyAsync(d, h, n, cudaMemcpyHostToDevice, s);
    case RT_ASYNC_DEFAULT: return (int)cudaMemcpyAsync(d, h, n, cudaMemcpyHostToDevice, 0);
    case DRV_SYNC: return (int)cuMemcpyHtoD((CUdeviceptr)d, h, n);
    default: return (int)cuMemcpyHtoDAsync((CUdeviceptr)d, h, n, (CUstream)s);
    }
}

static int dtoh(int api, void *h, const void *d, size_t n, cudaStream_t s)
{
    switch (api) {
    case RT_SYNC: return (int)cudaMemcpy(h, d, n, cudaMemcpyDeviceToHost);
    case RT_ASYNC_STREAM: return (int)cudaMemcpyAsync(h, d, n, cudaMemcpyDeviceToHost, s);
    case RT_ASYNC_DEFAULT: return (int)cudaMemcpyAsync(h, d, n, cudaMemcpyDeviceToHost, 0);
    case DRV_SYNC: return (int)cuMemcpyDtoH(h, (CUdeviceptr)d, n);
    default: return (int)cuMemcpyDtoHAsync(h, (CUdeviceptr)d, n, (CUstream)s);
    }
}

// One round trip: pageable -> device (checked through pinned memory), then
// device (filled from pinned memory) -> pageable, the bytes around the
// destination untouched.
static int round_trip(int api, unsigned char *d, unsigned char *host, unsigned char *pinned,
                      size_t n, size_t off, cudaStream_t s, uint64_t *st)
{
    int ok = 1;
    fill(host + off, n, st);
    ok &= htod(api, d, host + off, n, s) == 0;
    ok &= cudaDeviceSynchronize() == cudaSuccess;
    ok &= cudaMemcpy(pinned, d, n, cudaMemcpyDeviceToHost) == cudaSuccess &&
          !memcmp(pinned, host + off, n);
    fill(pinned, n, st);
    ok &= cudaMemcpy(d, pinned, n, cudaMemcpyHostToDevice) == cudaSuccess;
    memset(host, 0x5a, n + off + 8);
    ok &= dtoh(api, host + off, d, n, s) == 0;
    ok &= api == RT_SYNC || api == DRV_SYNC || cudaStreamSynchronize(s) == cudaSuccess;
    ok &= !memcmp(host + off, pinned, n) && host[off + n] == 0x5a && (off == 0 || host[0] == 0x5a);
    return ok;
}

__global__ void spin_write(uint32_t *p, size_t words, uint32_t v, long long cycles)
{
    long long t0 = clock64();
    while (clock64() - t0 < cycles) {
    }
    for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < words; i += gridDim.x * blockDim.x)
        p[i] = v ^ (uint32_t)i;
}

// Stream order: a kernel (slow to start) writes the buffer; a copy after it
// on the same stream must see all of it (device to host) or overwrite it
// (host to device).
static int stream_order(int api, unsigned char *d, unsigned char *host, unsigned char *pinned,
                        size_t n, cudaStream_t s, uint64_t *st)
{
    cudaStream_t ks = api == RT_ASYNC_STREAM || api == DRV_ASYNC ? s : 0;
    size_t words = n / 4;
    spin_write<<<256, 256, 0, ks>>>((uint32_t *)d, words, 0x1234567u, 20000000);
    int ok = dtoh(api, host, d, n, s) == 0;
    ok &= cudaDeviceSynchronize() == cudaSuccess;
    for (size_t i = 0; ok && i < words; i++)
        ok &= ((uint32_t *)host)[i] == (0x1234567u ^ (uint32_t)i);
    spin_write<<<256, 256, 0, ks>>>((uint32_t *)d, words, 0x7654321u, 20000000);
    fill(host, n, st);
    ok &= htod(api, d, host, n, s) == 0;
    ok &= cudaDeviceSynchronize() == cudaSuccess;
    ok &= cudaMemcpy(pinned, d, n, cudaMemcpyDeviceToHost) == cudaSuccess && !memcmp(pinned, host, n);
    return ok;
}

struct worker {
    int id, ok;
};

static void *work(void *arg)
{
    worker *w = (worker *)arg;
    uint64_t st = 0x51ed27u + (uint64_t)w->id * 7919u;
    size_t cap = 24 * MiB;
    unsigned char *host = (unsigned char *)malloc(cap + 64), *pinned = NULL, *d = NULL;
    cudaStream_t s = 0;
    w->ok = host && cudaStreamCreate(&s) == cudaSuccess &&
            cudaMallocHost(&pinned, cap) == cudaSuccess && cudaMalloc(&d, cap) == cudaSuccess;
    for (int i = 0; w->ok && i < 10; i++) {
        st ^= st << 13, st ^= st >> 7, st ^= st << 17;
        size_t n = MiB - 1 + (size_t)(st % (cap - 2 * MiB)), off = (size_t)((st >> 24) % 8);
        w->ok &= round_trip((int)((st >> 40) % N_APIS), d, host, pinned, n, off, s, &st);
    }
    cudaFree(d);
    cudaFreeHost(pinned);
    if (s)
        cudaStreamDestroy(s);
    free(host);
    return NULL;
}

int main(int argc, char **argv)
{
    int threads = argc > 1 ? atoi(argv[1]) : 4;
    skip_without_gpu();
    CK(cudaFree(0));
    cudaStream_t s;
    CK(cudaStreamCreate(&s));
    unsigned char *host = (unsigned char *)malloc(MAXN + 64), *pinned, *d;
    if (!host)
        return 1;
    memset(host, 0, MAXN + 64); // touched once, as a program's buffers are
    CK(cudaMallocHost(&pinned, MAXN));
    CK(cudaMalloc(&d, MAXN));
    uint64_t st = 0x9e3779b97f4a7c15ull;

    const size_t sizes[] = {MiB - 1, MiB, MiB + 1, 2 * MiB + 1, 8 * MiB - 1, 8 * MiB,
                            8 * MiB + 1, 15 * MiB - 1, 15 * MiB, 15 * MiB + 1,
                            4 * 8 * MiB + 13, 64 * MiB + 7};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        for (int api = 0; api < N_APIS; api++) {
            size_t off = (i + (size_t)api) % 3 == 0 ? 0 : (i + (size_t)api) % 8;
            printf("size=%zu %s off=%zu ok=%d\n", sizes[i], api_names[api], off,
                   verdict(round_trip(api, d, host, pinned, sizes[i], off, s, &st)));
        }
    for (int api = 0; api < N_APIS; api++)
        printf("stream order %s ok=%d\n", api_names[api],
               verdict(stream_order(api, d, host, pinned, 32 * MiB + 4, s, &st)));

    // Past the end of an allocation: the driver's error, nothing copied.
    unsigned char *small;
    CK(cudaMalloc(&small, 8 * MiB));
    fill(pinned, 8 * MiB, &st);
    CK(cudaMemcpy(small, pinned, 8 * MiB, cudaMemcpyHostToDevice));
    for (int api = 0; api < N_APIS; api++) {
        fill(host, 16 * MiB + 8, &st);
        memcpy(host + 32 * MiB, host, 16 * MiB + 8);
        int a = htod(api, small + 16, host + 3, 8 * MiB, s);
        cudaGetLastError();
        int b = dtoh(api, host + 5, small + 1, 16 * MiB, s);
        cudaGetLastError();
        CK(cudaDeviceSynchronize());
        CK(cudaMemcpy(pinned + 8 * MiB, small, 8 * MiB, cudaMemcpyDeviceToHost));
        printf("too long %s: htod=%d dtoh=%d ok=%d\n", api_names[api], a, b,
               verdict(!memcmp(pinned, pinned + 8 * MiB, 8 * MiB) &&
                       !memcmp(host, host + 32 * MiB, 16 * MiB + 8)));
    }

    if (threads > 16)
        threads = 16;
    worker w[16];
    pthread_t t[16];
    for (int i = 0; i < threads; i++) {
        w[i].id = i, w[i].ok = 0;
        if (pthread_create(&t[i], NULL, work, &w[i]) != 0)
            return 1;
    }
    int all = 1;
    for (int i = 0; i < threads; i++) {
        pthread_join(t[i], NULL);
        all &= w[i].ok;
    }
    printf("threads ok=%d\n", verdict(all));
    CK(cudaFree(small));
    CK(cudaFree(d));
    CK(cudaFreeHost(pinned));
    CK(cudaStreamDestroy(s));
    free(host);
    return verdicts();
}
