/* staging_prog.c - large copies between pageable host memory and device
 * memory through the driver API, as GPUACCEL_STAGING serves them: every
 * entry point (synchronous, _ptds, asynchronous on a created stream and on the
 * default one, _ptsz), sizes around 64 KiB and 256 KiB (tests/bats/staging.bats
 * sets the threshold and chunk there), unaligned host pointers; each copy
 * checked byte by byte against a copy through page-locked memory (which the
 * library never stages). Then copies that run past the end of an allocation
 * (their return codes printed; ok=1 when nothing was copied), several threads
 * at once, and a fork between copies. Runs against tests/fake and a real GPU
 * alike; the output must be the same natively and under the library.
 * usage: staging_prog [THREADS]  -> one "... ok=0|1" line per check (codes
 * beside), exit 1 when any fails
 *        staging_prog --loop N SIZE  -> N synchronous downloads of SIZE bytes
 * into the same pageable buffer, as a program's loop makes them (the
 * admission's choices over a run of alike copies), each checked */
#include "linked.h"
#include "verdict.h"

#include <pthread.h>
#include <stdbool.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

CUresult cuMemcpyHtoD_v2_ptds(CUdeviceptr dst, const void *src, size_t n);
CUresult cuMemcpyDtoH_v2_ptds(void *dst, CUdeviceptr src, size_t n);
CUresult cuMemcpyHtoDAsync_v2_ptsz(CUdeviceptr dst, const void *src, size_t n, CUstream s);
CUresult cuMemcpyDtoHAsync_v2_ptsz(void *dst, CUdeviceptr src, size_t n, CUstream s);

enum { MAXN = (5 << 20) + 64 };
enum { SYNC, PTDS, ASYNC_STREAM, ASYNC_NULL, PTSZ, N_MODES };
static const char *const mode_names[] = {"sync", "ptds", "async-stream", "async-null", "ptsz"};

static CUstream stream;

static void fill(unsigned char *p, size_t n, uint64_t *st)
{
    for (size_t i = 0; i < n; i++) {
        *st ^= *st << 13, *st ^= *st >> 7, *st ^= *st << 17;
        p[i] = (unsigned char)*st;
    }
}

static CUresult htod(int mode, CUdeviceptr d, const void *h, size_t n)
{
    switch (mode) {
    case SYNC: return cuMemcpyHtoD(d, h, n);
    case PTDS: return cuMemcpyHtoD_v2_ptds(d, h, n);
    case ASYNC_STREAM: return cuMemcpyHtoDAsync(d, h, n, stream);
    case ASYNC_NULL: return cuMemcpyHtoDAsync(d, h, n, NULL);
    default: return cuMemcpyHtoDAsync_v2_ptsz(d, h, n, NULL);
    }
}

static CUresult dtoh(int mode, void *h, CUdeviceptr d, size_t n)
{
    switch (mode) {
    case SYNC: return cuMemcpyDtoH(h, d, n);
    case PTDS: return cuMemcpyDtoH_v2_ptds(h, d, n);
    case ASYNC_STREAM: return cuMemcpyDtoHAsync(h, d, n, stream);
    case ASYNC_NULL: return cuMemcpyDtoHAsync(h, d, n, NULL);
    default: return cuMemcpyDtoHAsync_v2_ptsz(h, d, n, NULL);
    }
}

/* One round trip of n bytes at host offset off: pageable to device (checked
 * through pinned memory), then device to pageable (checked against the pinned
 * source). */
static int round_trip(int mode, CUdeviceptr d, unsigned char *host, unsigned char *pinned,
                      size_t n, size_t off, uint64_t *st)
{
    int ok = 1;
    fill(host + off, n, st);
    ok &= htod(mode, d, host + off, n) == CUDA_SUCCESS;
    ok &= cuCtxSynchronize() == CUDA_SUCCESS;
    ok &= cuMemcpyDtoH(pinned, d, n) == CUDA_SUCCESS && !memcmp(pinned, host + off, n);
    fill(pinned, n, st);
    ok &= cuMemcpyHtoD(d, pinned, n) == CUDA_SUCCESS;
    memset(host, 0x5a, n + off + 8);
    ok &= dtoh(mode, host + off, d, n) == CUDA_SUCCESS; /* filled on return */
    ok &= !memcmp(host + off, pinned, n) && host[off + n] == 0x5a && (off == 0 || host[0] == 0x5a);
    return ok;
}

typedef struct worker {
    int id, ok;
    CUcontext ctx;
} worker_t;

static void *work(void *arg)
{
    worker_t *w = arg;
    uint64_t st = 0x51ed27u + (uint64_t)w->id * 7919u;
    unsigned char *host = malloc((1 << 20) + 64), *pinned = NULL;
    CUdeviceptr d = 0;
    w->ok = host && cuCtxSetCurrent(w->ctx) == CUDA_SUCCESS &&
            cuMemHostAlloc((void **)&pinned, 1 << 20, 0) == CUDA_SUCCESS &&
            cuMemAlloc(&d, 1 << 20) == CUDA_SUCCESS;
    for (int i = 0; w->ok && i < 12; i++) {
        size_t n = (64 << 10) + (size_t)(st % (900 << 10)), off = (size_t)((st >> 24) % 8);
        int mode = (int)((st >> 40) % N_MODES);
        if (mode == ASYNC_STREAM)
            mode = PTSZ; /* the created stream belongs to the main thread's checks */
        w->ok &= round_trip(mode, d, host, pinned, n, off, &st);
    }
    if (d)
        cuMemFree(d);
    if (pinned)
        cuMemFreeHost(pinned);
    free(host);
    return NULL;
}

/* N downloads of n bytes from device memory filled through pinned memory,
 * each compared with its source. */
static int loop(CUdeviceptr d, unsigned char *host, unsigned char *pinned, long count, size_t n,
                uint64_t *st)
{
    int ok = 1;
    for (long i = 0; i < count; i++) {
        fill(pinned, n, st);
        ok &= cuMemcpyHtoD(d, pinned, n) == CUDA_SUCCESS;
        memset(host, 0x5a, n);
        ok &= cuMemcpyDtoH(host, d, n) == CUDA_SUCCESS && !memcmp(host, pinned, n);
    }
    return ok;
}

int main(int argc, char **argv)
{
    bool looping = argc == 4 && !strcmp(argv[1], "--loop");
    long count = looping ? atol(argv[2]) : 0;
    size_t size = looping ? strtoull(argv[3], NULL, 0) : 0;
    if (looping && (count < 1 || size < 1 || size > MAXN)) {
        fprintf(stderr, "staging_prog: --loop N SIZE: N at least 1, SIZE 1 to %d bytes\n", MAXN);
        return 2;
    }
    int threads = !looping && argc > 1 ? atoi(argv[1]) : 4;
    CUdevice dev;
    CUcontext ctx;
    linked_context(&dev, &ctx);
    CK(cuStreamCreate(&stream, 0));
    unsigned char *host = malloc(MAXN + 64), *pinned;
    CK(host ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY);
    CK(cuMemHostAlloc((void **)&pinned, MAXN, 0));
    CUdeviceptr d;
    CK(cuMemAlloc(&d, MAXN));
    uint64_t st = 0x9e3779b97f4a7c15ull;
    if (looping) {
        printf("loop %ld x %zu ok=%d\n", count, size, verdict(loop(d, host, pinned, count, size, &st)));
        return verdicts();
    }

    const size_t sizes[] = {(64 << 10) - 1, 64 << 10, (256 << 10) - 1, 256 << 10,
                            (256 << 10) + 1, 3 * (256 << 10) + 777, (5 << 20) + 3};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        for (int mode = 0; mode < N_MODES; mode++) {
            size_t off = (i + (size_t)mode) % 3 == 0 ? 0 : (i + (size_t)mode) % 8;
            printf("size=%zu %s off=%zu ok=%d\n", sizes[i], mode_names[mode], off,
                   verdict(round_trip(mode, d, host, pinned, sizes[i], off, &st)));
        }

    /* Past the end of the allocation: the driver's error, nothing copied. */
    CUdeviceptr small;
    CK(cuMemAlloc(&small, 1 << 20));
    fill(pinned, 1 << 20, &st);
    CK(cuMemcpyHtoD(small, pinned, 1 << 20));
    for (int mode = 0; mode < N_MODES; mode++) {
        fill(host, (2 << 20) + 8, &st);
        memcpy(host + (3 << 20), host, (2 << 20) + 8);
        CUresult a = htod(mode, small + 16, host + 3, 1 << 20);
        CUresult b = dtoh(mode, host + 5, small + 1, 2 << 20);
        CK(cuCtxSynchronize());
        CK(cuMemcpyDtoH(pinned + (1 << 20), small, 1 << 20));
        printf("too long %s: htod=%d dtoh=%d ok=%d\n", mode_names[mode], (int)a, (int)b,
               verdict(!memcmp(pinned, pinned + (1 << 20), 1 << 20) &&
                       !memcmp(host, host + (3 << 20), (2 << 20) + 8)));
    }

    /* A fork between copies: the child uses no CUDA (none may), the parent
     * goes on copying. */
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0)
        _exit(0);
    int status = 0;
    waitpid(pid, &status, 0);
    printf("after fork ok=%d\n",
           verdict(round_trip(SYNC, d, host, pinned, 3 << 20, 1, &st) &&
                   round_trip(ASYNC_STREAM, d, host, pinned, 3 << 20, 2, &st)));

    worker_t w[16];
    pthread_t t[16];
    if (threads > 16)
        threads = 16;
    for (int i = 0; i < threads; i++) {
        w[i] = (worker_t){i, 0, ctx};
        CK(pthread_create(&t[i], NULL, work, &w[i]) == 0 ? CUDA_SUCCESS : CUDA_ERROR_UNKNOWN);
    }
    int all = 1;
    for (int i = 0; i < threads; i++) {
        pthread_join(t[i], NULL);
        all &= w[i].ok;
    }
    printf("threads ok=%d\n", verdict(all));
    CK(cuMemFree(small));
    CK(cuMemFree(d));
    CK(cuMemFreeHost(pinned));
    CK(cuStreamDestroy(stream));
    free(host);
    return verdicts();
}
