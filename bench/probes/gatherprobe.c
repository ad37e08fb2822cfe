/* gatherprobe.c - what one gather of a query's scattered reads costs, by the
 * way its result comes back. B buffers of 256 KiB each (a query phase's
 * columns, Merkle layers and fold layers); each iteration reads one 4-byte
 * word at a random place of every buffer:
 *   reads     B synchronous 4-byte copies to pageable memory (the program)
 *   old-dev   the byte-storing gather kernel (OLD.ptx) into device memory, then
 *             one synchronous copy to pageable memory
 *   dev       the one-store-a-cell kernel (NEW.ptx), the same way
 *   mapped    NEW.ptx into page-locked memory mapped into the device, then a
 *             synchronization of the legacy stream (more than 128 reads: their
 *             list in that memory too, as the library passes it)
 *   pinned    NEW.ptx into device memory, an asynchronous copy to page-locked
 *             memory and a synchronization of the legacy stream
 * Prints the mean microseconds an iteration, of its launch alone, and how many
 * words differ from what the plain reads got (must be 0). With more than 128
 * reads, only reads and mapped run (the others' parameters hold 128).
 * usage: gatherprobe OLD.ptx NEW.ptx [ITERATIONS] [BUFFERS] [READS]
 * Built on the GPU machine: gcc -O2 -I/usr/local/cuda/include gatherprobe.c -lcuda */
#include <cuda.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../tests/progs/linked.h" /* CK, linked_context */
#include "../clock.h"

enum { MAXB = 128, MAXR = 2048, WORDS = 65536 };

typedef struct old_args { /* OLD.ptx's parameter */
    unsigned long long dst;
    unsigned count, pad;
    unsigned long long src[128];
    unsigned n[128];
} old_args_t;

typedef struct new_args { /* NEW.ptx's parameter (kernels/gather.cu) */
    unsigned long long dst, list;
    unsigned count, stamp;
    unsigned long long done; /* the blocks' words (set, never waited on here) */
    unsigned long long src[128];
    unsigned n[128];
} new_args_t;

typedef struct list_entry {
    unsigned long long src;
    unsigned n, pad;
} list_entry_t;

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
    unsigned nr = argc > 5 ? (unsigned)atoi(argv[5]) : nb;
    if (nb < 1 || nb > MAXB || nr < 1 || nr > MAXR || iters < 1)
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
    CK(cuMemAlloc(&scratch, MAXR * 16 + 64));
    unsigned char *mapped, *pinned;
    CUdeviceptr mapped_dev;
    CK(cuMemHostAlloc((void **)&mapped, MAXR * 16 + MAXR * sizeof(list_entry_t) + 64,
                      CU_MEMHOSTALLOC_DEVICEMAP));
    CK(cuMemHostGetDevicePointer(&mapped_dev, mapped, 0));
    CK(cuMemHostAlloc((void **)&pinned, MAXR * 16, 0));
    CK(cuCtxSynchronize());
    const char *names[] = {"reads", "old-dev", "dev", "mapped", "pinned"};
    double total[5] = {0}, launch[5] = {0};
    long bad[5] = {0};
    static uint32_t want[MAXR], page[MAXR * 4];
    static unsigned long long src[MAXR];
    bool inline_ok = nr <= 128;
    for (int it = -50; it < iters; it++) { /* 50 warm-up iterations */
        for (unsigned r = 0; r < nr; r++)
            src[r] = buf[r % nb] + 4 * (next() % WORDS);
        old_args_t oa = {0};
        new_args_t na = {0};
        oa.count = na.count = nr;
        for (unsigned r = 0; r < nr && inline_ok; r++)
            oa.src[r] = na.src[r] = src[r], oa.n[r] = na.n[r] = 4;
        for (int v = 0; v < 5; v++) { /* alternating, in one loop */
            if (!inline_ok && (v == 1 || v == 2 || v == 4))
                continue;
            double t0 = now_us(), t1 = t0;
            memset(page, 0, sizeof page);
            if (v == 0) {
                for (unsigned r = 0; r < nr; r++)
                    CK(cuMemcpyDtoH(&want[r], src[r], 4));
            } else {
                na.dst = oa.dst = v == 3 ? mapped_dev : scratch;
                na.list = 0, na.stamp = 1;
                na.done = v == 3 ? mapped_dev + MAXR * 16 + MAXR * sizeof(list_entry_t)
                                 : scratch + MAXR * 16;
                if (v == 3 && !inline_ok) {
                    list_entry_t *l = (list_entry_t *)(mapped + MAXR * 16);
                    for (unsigned r = 0; r < nr; r++)
                        l[r] = (list_entry_t){src[r], 4, 0};
                    na.list = mapped_dev + MAXR * 16;
                }
                void *params[] = {v == 1 ? (void *)&oa : (void *)&na};
                CK(cuLaunchKernel(v == 1 ? fold : fnew, (nr + 127) / 128, 1, 1, 128, 1, 1, 0,
                                  CU_STREAM_LEGACY, params, NULL));
                t1 = now_us();
                if (v == 1 || v == 2) {
                    CK(cuMemcpyDtoH(page, scratch, nr * 16));
                } else if (v == 3) {
                    CK(cuStreamSynchronize(CU_STREAM_LEGACY));
                    memcpy(page, mapped, nr * 16);
                } else {
                    CK(cuMemcpyDtoHAsync(pinned, scratch, nr * 16, CU_STREAM_LEGACY));
                    CK(cuStreamSynchronize(CU_STREAM_LEGACY));
                    memcpy(page, pinned, nr * 16);
                }
                for (unsigned r = 0; r < nr; r++)
                    bad[v] += page[4 * r] != want[r];
            }
            double t2 = now_us();
            if (it >= 0)
                total[v] += t2 - t0, launch[v] += v ? t1 - t0 : 0;
        }
    }
    for (int v = 0; v < 5; v++)
        if (inline_ok || v == 0 || v == 3)
            printf("gatherprobe %-8s %8.2f us an iteration, launch %.2f us, %u reads in %u buffers,"
                   " bad=%ld\n", names[v], total[v] / iters, launch[v] / iters, nr, nb, bad[v]);
    return 0;
}
