/* tunemem_prog.c - what real provers allocate, for the tuner: a stream-ordered
 * buffer (cuMemAllocAsync, as cudaMallocAsync) and a page-locked host buffer
 * (cuMemAllocHost, as cudaMallocHost), each updated in place four times by an
 * accumulating kernel (add: p[i] += v for i < n), the host buffer through
 * unified addressing. A tuner that ran the kernel again without restoring
 * either buffer would change the sums. Runs against tests/fake and a GPU.
 * usage: tunemem_prog KERNELS.PTX [N]  -> "async=<sum> host=<sum>"
 *   N  the words of each buffer and the threads of each launch: a multiple of
 *      128 up to 65536 (default 4096) */
#include "linked.h"
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

enum { MAX_N = 65536 };

int main(int argc, char **argv)
{
    static uint32_t h[MAX_N];
    uint32_t N = argc > 2 ? (uint32_t)strtoul(argv[2], NULL, 10) : 4096;
    if (!N || N % 128 || N > MAX_N)
        return fprintf(stderr, "usage: %s KERNELS.PTX [N: a multiple of 128 up to %d]\n",
                       argv[0], MAX_N), 2;
    size_t bytes = N * sizeof *h;
    CUfunction add = linked_kernel(argc, argv, "add");
    CUdeviceptr d;
    uint32_t *pinned;
    CK(cuMemAllocAsync(&d, bytes, NULL));
    CK(cuMemAllocHost((void **)&pinned, bytes));
    for (uint32_t i = 0; i < N; i++)
        h[i] = (uint32_t)i, pinned[i] = (uint32_t)(3 * i);
    CK(cuMemcpyHtoD(d, h, bytes));
    CUdeviceptr hp = (CUdeviceptr)(uintptr_t)pinned;
    uint32_t n = N, v = 5, w = 9;
    void *on_dev[] = {&d, &n, &v}, *on_host[] = {&hp, &n, &w};
    /* Two configurations: each is tried once, on its own buffer. */
    for (int i = 0; i < 4; i++) {
        CK(cuLaunchKernel(add, N / 128, 1, 1, 128, 1, 1, 0, NULL, on_dev, NULL));
        CK(cuLaunchKernel(add, N / 64, 1, 1, 64, 1, 1, 0, NULL, on_host, NULL));
    }
    CK(cuCtxSynchronize());
    CK(cuMemcpyDtoH(h, d, bytes));
    uint64_t a = 0, b = 0;
    for (uint32_t i = 0; i < N; i++)
        a += h[i], b += pinned[i];
    printf("async=%llu host=%llu\n", (unsigned long long)a, (unsigned long long)b);
    CK(cuMemFreeAsync(d, NULL));
    CK(cuMemFreeHost(pinned));
    return 0;
}
