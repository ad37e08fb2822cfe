/* hostmem_prog.c - stream-ordered allocations and page-locked host memory as
 * provers use them, for comparing a run under the library with a native one.
 * Every buffer carries a seeded pattern through the device and back, checked.
 *   hostmem_prog async [N]   N x (cuMemAllocAsync 1 MiB, fill, read back,
 *                            cuMemFreeAsync, stream sync); then the default
 *                            pool's threshold as the program reads it, what
 *                            it keeps reserved, and cuMemGetInfo's free bytes
 *   hostmem_prog setfirst    the same after the program set the threshold
 *   hostmem_prog pinned [N]  N x (cuMemHostAlloc of changing sizes and flags,
 *                            fill, through the device, cuMemFreeHost); then
 *                            how many allocations reached the driver (the
 *                            fake driver counts them)
 *   hostmem_prog portable    a 256 KiB block without flags, freed, then a
 *                            64 KiB portable one: the flags the driver
 *                            reports for it */
#define _GNU_SOURCE
#include "linked.h"
#include <dlfcn.h>
#include <string.h>

static unsigned bad;

static void roundtrip(void *host, size_t n, unsigned seed)
{
    unsigned char *h = host;
    for (size_t k = 0; k < n; k++)
        h[k] = (unsigned char)(seed * 131 + k * 7);
    CUdeviceptr d;
    CK(cuMemAlloc(&d, n));
    CK(cuMemcpyHtoD(d, h, n));
    memset(h, 0, n);
    CK(cuMemcpyDtoH(h, d, n));
    CK(cuMemFree(d));
    for (size_t k = 0; k < n; k++)
        bad += h[k] != (unsigned char)(seed * 131 + k * 7);
}

static void async_loop(int n)
{
    static unsigned char buf[1 << 20];
    for (int i = 0; i < n; i++) {
        CUdeviceptr d;
        CK(cuMemAllocAsync(&d, sizeof buf, NULL));
        memset(buf, i, sizeof buf);
        CK(cuMemcpyHtoD(d, buf, sizeof buf));
        memset(buf, 0xEE, sizeof buf);
        CK(cuMemcpyDtoH(buf, d, sizeof buf));
        for (size_t k = 0; k < sizeof buf; k++)
            bad += buf[k] != (unsigned char)i;
        CK(cuMemFreeAsync(d, NULL));
        CK(cuStreamSynchronize(NULL));
    }
    CUmemoryPool pool;
    cuuint64_t threshold, reserved;
    size_t free_b, total;
    CK(cuDeviceGetDefaultMemPool(&pool, 0));
    CK(cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &threshold));
    CK(cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &reserved));
    CK(cuMemGetInfo(&free_b, &total));
    printf("threshold=%llu\nreserved=%llu\nfree=%zu\n", (unsigned long long)threshold,
           (unsigned long long)reserved, free_b);
}

static void pinned_loop(int n)
{
    static const size_t sizes[] = {4096, 65536, 5000, 1 << 20, 65536, 4096};
    static const unsigned flags[] = {0, CU_MEMHOSTALLOC_PORTABLE, 0, CU_MEMHOSTALLOC_DEVICEMAP,
                                     CU_MEMHOSTALLOC_PORTABLE, 0};
    for (int i = 0; i < n; i++) {
        size_t k = (size_t)i % 6;
        void *p;
        if (k == 5)
            CK(cuMemAllocHost(&p, sizes[k]));
        else
            CK(cuMemHostAlloc(&p, sizes[k], flags[k]));
        roundtrip(p, sizes[k], (unsigned)i);
        CK(cuMemFreeHost(p));
    }
    unsigned (*count)(void) = (unsigned (*)(void))dlsym(RTLD_DEFAULT, "fakecuda_host_allocs");
    printf("driver_host_allocs=%u\n", count ? count() : 0);
}

static void portable(void)
{
    void *a, *b;
    unsigned flags = 0;
    CK(cuMemHostAlloc(&a, 256 << 10, 0));
    roundtrip(a, 256 << 10, 1);
    CK(cuMemFreeHost(a));
    CK(cuMemHostAlloc(&b, 64 << 10, CU_MEMHOSTALLOC_PORTABLE));
    roundtrip(b, 64 << 10, 2);
    CK(cuMemHostGetFlags(&flags, b));
    printf("portable=%d\n", !!(flags & CU_MEMHOSTALLOC_PORTABLE));
    CK(cuMemFreeHost(b));
}

int main(int argc, char **argv)
{
    CUdevice dev;
    CUcontext ctx;
    const char *mode = argc > 1 ? argv[1] : "async";
    int n = argc > 2 ? atoi(argv[2]) : 24;
    linked_context(&dev, &ctx);
    if (!strcmp(mode, "setfirst")) {
        CUmemoryPool pool;
        cuuint64_t keep = 12345;
        CK(cuDeviceGetDefaultMemPool(&pool, dev));
        CK(cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &keep));
    }
    if (!strcmp(mode, "pinned"))
        pinned_loop(n);
    else if (!strcmp(mode, "portable"))
        portable();
    else
        async_loop(n);
    printf("bad=%u\n", bad);
    return bad != 0;
}
