/* gatherprobe.c - what one gather of a query's scattered reads costs, by the
 * way its result comes back. B buffers of 256 KiB each (a query phase's
 * columns, Merkle layers and fold layers); each iteration reads one 4-byte
 * word at a random place of every buffer:
 *   reads     B synchronous 4-byte copies to pageable memory (the program)
 *   old-dev   the byte-storing gather kernel (OLD.ptx) into device memory, then
 *             one synchronous copy to pageable memory
 *   dev       the one-store-a-cell kernel (NEW.ptx), the same way
 *   mapped    NEW.ptx into page-locked memory mapped into the device, then a
 *             synchronization of the legacy stream
 *   pinned    NEW.ptx into device memory, an asynchronous copy to page-locked
 *             memory and a synchronization of the legacy stream
 * Prints the mean microseconds an iteration, of its launch alone, and how many
 * words differ from what the plain reads got (must be 0).
 * usage: gatherprobe OLD.ptx NEW.ptx [ITERATIONS] [BUFFERS]
 * Built on the GPU machine: gcc -O2 -I/usr/local/cuda/include gatherprobe.c -lcuda */
#include <cuda.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../tests/progs/linked.h" /* CK, linked_context */
#include "../clock.h"

enum { MAXB = 128, WORDS = 65536 };

typedef struct args {
    unsigned long long dst;
    unsigned count, pad;
    unsigned long long src[128];
    unsigned n[128];
} args_t;

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        perror(path);
        exit(2);
    }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *p = calloc(1, (size_t)n + 1);
    if (!p || fread(p, 1, (size_t)n, f) != (size_t)n)
        exit(2);
    fclose(f);
    return p;
}

static CUfunction load(const char *path)
{
    CUmodule m;
    CUfunction f;
    CK(cuModuleLoadData(&m, slurp(path)));
    CK(cuModuleGetFunction(&f, m, "ga_gather"));
    return f;
}

static uint32_t rng = 2463534242u;
static uint32_t next(void)
{
    rng ^= rng << 13, rng ^= rng >> 17, rng ^= rng << 5;
    return rng;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: gatherprobe OLD.ptx NEW.ptx [ITERATIONS] [BUFFERS]\n");
        return 2;
    }
    int iters = argc > 3 ? atoi(argv[3]) : 2000;
    unsigned nb = argc > 4 ? (unsigned)atoi(argv[4]) : 48;
    if (nb < 1 || nb > MAXB || iters < 1)
        return 2;
    CUdevice d;
    CUcontext c;
    linked_context(&d, &c);
    CUfunction fold = load(argv[1]), fnew = load(argv[2]);
    CUdeviceptr buf[MAXB], scratch;
    for (unsigned b = 0; b < nb; b++) {
        CK(cuMemAlloc(&buf[b], WORDS * 4));
        CK(cuMemsetD32(buf[b], 0x1000u * b + 7, WORDS));
        CK(cuMemsetD32(buf[b] + 4 * (next() % WORDS), next(), 1));
    }
    CK(cuMemAlloc(&scratch, MAXB * 16));
    void *mapped, *pinned;
    CUdeviceptr mapped_dev;
    CK(cuMemHostAlloc(&mapped, MAXB * 16, CU_MEMHOSTALLOC_DEVICEMAP));
    CK(cuMemHostGetDevicePointer(&mapped_dev, mapped, 0));
    CK(cuMemHostAlloc(&pinned, MAXB * 16, 0));
    CK(cuCtxSynchronize());
    const char *names[] = {"reads", "old-dev", "dev", "mapped", "pinned"};
    double total[5] = {0}, launch[5] = {0};
    long bad[5] = {0};
    uint32_t *want = calloc(nb, 4), page[MAXB * 4];
    for (int it = -50; it < iters; it++) { /* 50 warm-up iterations */
        args_t a = {0};
        a.count = nb;
        for (unsigned b = 0; b < nb; b++)
            a.src[b] = buf[b] + 4 * (next() % WORDS), a.n[b] = 4;
        for (int v = 0; v < 5; v++) { /* alternating, in one loop */
            double t0 = now_us(), t1 = t0;
            void *params[] = {&a};
            memset(page, 0, sizeof page);
            if (v == 0) {
                for (unsigned b = 0; b < nb; b++)
                    CK(cuMemcpyDtoH(&want[b], a.src[b], 4));
            } else {
                a.dst = v == 3 ? mapped_dev : scratch;
                CK(cuLaunchKernel(v == 1 ? fold : fnew, 1, 1, 1, 128, 1, 1, 0, CU_STREAM_LEGACY,
                                  params, NULL));
                t1 = now_us();
                if (v == 1 || v == 2) {
                    CK(cuMemcpyDtoH(page, scratch, nb * 16));
                } else if (v == 3) {
                    CK(cuStreamSynchronize(CU_STREAM_LEGACY));
                    memcpy(page, mapped, nb * 16);
                } else {
                    CK(cuMemcpyDtoHAsync(pinned, scratch, nb * 16, CU_STREAM_LEGACY));
                    CK(cuStreamSynchronize(CU_STREAM_LEGACY));
                    memcpy(page, pinned, nb * 16);
                }
                for (unsigned b = 0; b < nb; b++)
                    bad[v] += page[4 * b] != want[b];
            }
            double t2 = now_us();
            if (it >= 0)
                total[v] += t2 - t0, launch[v] += v ? t1 - t0 : 0;
        }
    }
    for (int v = 0; v < 5; v++)
        printf("gatherprobe %-8s %8.2f us an iteration, launch %.2f us, %u reads, bad=%ld\n",
               names[v], total[v] / iters, launch[v] / iters, nb, bad[v]);
    return 0;
}
