/* mix_prog.c - one program that gives every serving feature its work, phase
 * after phase, for the composition test (tests/bats/composition.bats): each
 * feature alone, each pair and all of them must keep serving what each serves
 * alone, with output equal to a native run's. Runs against tests/fake.
 *   mix_prog KERNELS.PTX -> one "<phase> ok=1" line per phase, "digest=<hex>"
 * Phases, in this order (pinned last: page-locked memory ends deferral):
 *   allocs   cuMemAlloc/fill/read/cuMemFree churn            (pool)
 *   async    cuMemAllocAsync/fill/read/cuMemFreeAsync, sync   (async_pool)
 *   streams  a stream created, used and destroyed per round   (streams)
 *   syncs    8 kernels then cuCtxSynchronize, repeated        (lazy_sync, graphs)
 *   reads    4-byte synchronous and .item()-style reads       (coalesce)
 *   copies   8 MiB pageable copies both ways, the first download
 *            into memory never touched                       (staging)
 *   pinned   cuMemHostAlloc/copy/cuMemFreeHost churn          (pinned) */
#include "linked.h"
#include <string.h>

static uint64_t digest = 1469598103934665603ull;

static void mix(uint32_t v)
{
    digest = (digest ^ v) * 1099511628211ull;
}

static uint32_t read_word(CUdeviceptr p)
{
    uint32_t v;
    CK(cuMemcpyDtoH(&v, p, 4));
    return v;
}

static void report(const char *phase, int ok)
{
    printf("%s ok=%d\n", phase, ok);
}

static void allocs(CUfunction fill)
{
    int ok = 1;
    for (uint32_t i = 0; i < 64; i++) {
        CUdeviceptr p;
        CK(cuMemAlloc(&p, 64 << 10));
        linked_launch(fill, NULL, p, 16 << 10, i * 7 + 1, 0);
        uint32_t v = read_word(p + 4 * (i % 1024));
        ok &= v == i * 7 + 1;
        mix(v);
        CK(cuMemFree(p));
    }
    report("allocs", ok);
}

static void async_allocs(CUfunction fill)
{
    CUstream s;
    CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    int ok = 1;
    for (uint32_t i = 0; i < 32; i++) {
        CUdeviceptr p;
        uint32_t v = 0;
        CK(cuMemAllocAsync(&p, 1 << 20, s));
        linked_launch(fill, s, p, 1 << 18, i + 100, 0);
        CK(cuMemcpyDtoHAsync(&v, p + 4 * i, 4, s));
        CK(cuMemFreeAsync(p, s));
        CK(cuStreamSynchronize(s));
        ok &= v == i + 100;
        mix(v);
    }
    CK(cuStreamDestroy(s));
    report("async", ok);
}

static void streams(CUfunction fill)
{
    CUdeviceptr p;
    CK(cuMemAlloc(&p, 4096));
    int ok = 1;
    for (uint32_t i = 0; i < 32; i++) {
        CUstream s;
        uint32_t v = 0;
        CK(cuStreamCreate(&s, i % 2 ? CU_STREAM_NON_BLOCKING : CU_STREAM_DEFAULT));
        linked_launch(fill, s, p, 1024, i + 5, 0);
        CK(cuMemcpyDtoHAsync(&v, p + 4 * i, 4, s));
        CK(cuStreamSynchronize(s));
        CK(cuStreamDestroy(s));
        ok &= v == i + 5;
        mix(v);
    }
    CK(cuMemFree(p));
    report("streams", ok);
}

static void syncs(CUfunction fill, CUfunction add)
{
    enum { N = 1 << 16 };
    CUdeviceptr p;
    CK(cuMemAlloc(&p, 4 * N));
    linked_launch(fill, NULL, p, N, 0, 0);
    for (int round = 0; round < 40; round++) {
        for (int k = 0; k < 8; k++)
            linked_launch(add, NULL, p, N, (uint32_t)(k + 1), 0);
        CK(cuCtxSynchronize());
    }
    uint32_t v = read_word(p + 4 * 777);
    mix(v);
    report("syncs", v == 40u * 36u);
    CK(cuMemFree(p));
}

static void reads(CUfunction fill, CUfunction add)
{
    enum { N = 4096 };
    CUdeviceptr p;
    CK(cuMemAlloc(&p, 4 * N));
    linked_launch(fill, NULL, p, N, 3, 0);
    int ok = 1;
    for (int k = 0; k < 1024; k++) /* a scan of small synchronous reads */
        ok &= read_word(p + 4 * (CUdeviceptr)k) == 3;
    linked_launch(add, NULL, p, N, 4, 0);
    for (int k = 0; k < 1024; k++) { /* .item(): an async read and its stream sync */
        uint32_t v = 0;
        CK(cuMemcpyDtoHAsync(&v, p + 4 * (CUdeviceptr)(N - 1 - k), 4, NULL));
        CK(cuStreamSynchronize(NULL));
        ok &= v == 7;
        mix(v + (uint32_t)k);
    }
    report("reads", ok);
    CK(cuMemFree(p));
}

static void copies(void)
{
    enum { BYTES = 8 << 20 };
    uint32_t *up = malloc(BYTES), *down = malloc(BYTES);
    CUdeviceptr p;
    if (!up || !down)
        exit(1);
    CK(cuMemAlloc(&p, BYTES));
    int ok = 1;
    for (uint32_t r = 0; r < 8; r++) {
        for (size_t i = 0; i < BYTES / 4; i++)
            up[i] = (uint32_t)i * 2654435761u ^ r;
        if (r) /* the first read lands in pages never touched, as into a new vector */
            memset(down, 0, BYTES);
        CK(cuMemcpyHtoD(p, up, BYTES));
        CK(cuMemcpyDtoH(down, p, BYTES));
        ok &= memcmp(up, down, BYTES) == 0;
        mix(down[r * 4099]);
    }
    CK(cuMemFree(p));
    free(up);
    free(down);
    report("copies", ok);
}

static void pinned(CUfunction fill)
{
    CUdeviceptr p;
    CK(cuMemAlloc(&p, 64 << 10));
    int ok = 1;
    for (uint32_t i = 0; i < 32; i++) {
        uint32_t *h;
        CK(cuMemHostAlloc((void **)&h, 64 << 10, 0));
        linked_launch(fill, NULL, p, 16 << 10, i + 9, 0);
        CK(cuMemcpyDtoH(h, p, 64 << 10));
        ok &= h[i] == i + 9 && h[(16 << 10) - 1] == i + 9;
        mix(h[i]);
        CK(cuMemFreeHost(h));
    }
    CK(cuMemFree(p));
    report("pinned", ok);
}

int main(int argc, char **argv)
{
    CUdevice dev;
    CUcontext ctx;
    CUmodule mod = linked_setup(argc, argv, &dev, &ctx);
    CUfunction fill, add;
    CK(cuModuleGetFunction(&fill, mod, "fill"));
    CK(cuModuleGetFunction(&add, mod, "add"));
    allocs(fill);
    async_allocs(fill);
    streams(fill);
    syncs(fill, add);
    reads(fill, add);
    copies();
    pinned(fill);
    printf("digest=%016llx\n", (unsigned long long)digest);
    return 0;
}
