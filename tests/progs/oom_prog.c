/* oom_prog.c - allocation churn on a small device (tests/fake with
 * FAKECUDA_MEM or FAKECUDA_FAULT): blocks of changing sizes, a few kept live,
 * each filled with a seeded pattern and checked before it is freed. Prints
 * one line per allocation (its size and the driver's code) and a summary, so
 * a run under the library can be compared with a native one line by line:
 * a caching allocator must not fail an allocation the driver alone grants,
 * and must pass on the driver's code where the driver refuses.
 * usage: oom_prog [STEPS]   -> "alloc <i> <bytes> <code>"..., "checked=<n> bad=<n>" */
#include "linked.h"
#include <stdint.h>
#include <string.h>

enum { KEEP = 3, MAXW = 6 << 20 }; /* live blocks; words in the largest block */

static uint32_t pattern(uint32_t seed, size_t k) { return seed * 2654435761u ^ (uint32_t)k; }

int main(int argc, char **argv)
{
    static const size_t sizes[] = {1 << 20, 8 << 20, 24 << 20, 3 << 20, 16 << 20, 20 << 20};
    int steps = argc > 1 ? atoi(argv[1]) : 40;
    static uint32_t buf[MAXW];
    CUdeviceptr live[KEEP] = {0};
    size_t live_size[KEEP] = {0};
    uint32_t live_seed[KEEP] = {0};
    unsigned checked = 0, bad = 0;
    CUdevice dev;
    CUcontext ctx;
    linked_context(&dev, &ctx);
    for (int i = 0; i < steps; i++) {
        int slot = i % KEEP;
        if (live[slot]) { /* check what this slot held, then free it */
            size_t n = live_size[slot] / 4;
            CK(cuMemcpyDtoH(buf, live[slot], live_size[slot]));
            for (size_t k = 0; k < n; k++)
                bad += buf[k] != pattern(live_seed[slot], k);
            checked++;
            CK(cuMemFree(live[slot]));
            live[slot] = 0;
        }
        size_t size = sizes[(size_t)i * 7 % (sizeof sizes / sizeof sizes[0])];
        CUdeviceptr d;
        CUresult r = cuMemAlloc(&d, size);
        printf("alloc %d %zu %d\n", i, size, (int)r);
        if (r != CUDA_SUCCESS)
            continue;
        for (size_t k = 0; k < size / 4; k++)
            buf[k] = pattern((uint32_t)i, k);
        CK(cuMemcpyHtoD(d, buf, size));
        live[slot] = d, live_size[slot] = size, live_seed[slot] = (uint32_t)i;
    }
    for (int s = 0; s < KEEP; s++)
        if (live[s])
            CK(cuMemFree(live[s]));
    size_t free_b, total;
    CK(cuMemGetInfo(&free_b, &total));
    printf("checked=%u bad=%u free_at_exit=%zu\n", checked, bad, free_b);
    return 0;
}
