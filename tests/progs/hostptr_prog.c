/* hostptr_prog.c - "host" arguments that are not host memory, and sizes of 0
 * and NULL pointers, as real code passes them: the driver accepts a device
 * pointer where a copy names host memory (unified addressing), so must the
 * library. Prints what it read and every return code, for comparison of a
 * native run with one under the library. Links -lcuda; loads kernels.ptx.
 *   device-dst  4-byte device-to-host copies (sync, async + stream sync, and
 *               cuMemcpy) whose destination is device memory, in a loop that
 *               coalescing would serve: the destination's words are checked
 *   zero        cuMemAlloc of 0, cuMemFree(0), cuMemFreeAsync(0), 0-byte
 *               copies each way, a NULL host pointer: the return codes
 * usage: hostptr_prog KERNELS.PTX */
#include "linked.h"
#include <stdint.h>
#include <stdio.h>

enum { N = 4096 };

static void fill(CUfunction f, CUdeviceptr p, uint32_t v)
{
    linked_launch(f, NULL, p, N, v, 0);
}

int main(int argc, char **argv)
{
    CUdevice dev;
    CUcontext ctx;
    CUmodule mod = linked_setup(argc, argv, &dev, &ctx);
    CUfunction fill_fn, add_fn;
    CK(cuModuleGetFunction(&fill_fn, mod, "fill"));
    CK(cuModuleGetFunction(&add_fn, mod, "add"));
    CUstream s;
    CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CUdeviceptr src, dst;
    CK(cuMemAlloc(&src, N * 4));
    CK(cuMemAlloc(&dst, N * 4));
    fill(fill_fn, src, 0);
    fill(fill_fn, dst, 0);
    linked_launch(add_fn, NULL, src, N, 5, 0); /* src = 5 */
    CK(cuCtxSynchronize());

    /* device-dst: every third word of src to the same word of dst, three ways */
    for (int i = 0; i < N; i += 3) {
        void *d = (void *)(uintptr_t)(dst + 4 * (CUdeviceptr)i);
        CUdeviceptr from = src + 4 * (CUdeviceptr)i;
        if (i % 9 == 0)
            CK(cuMemcpyDtoH(d, from, 4));
        else if (i % 9 == 3) {
            CK(cuMemcpyDtoHAsync(d, from, 4, s));
            CK(cuStreamSynchronize(s));
        } else {
            CK(cuMemcpy((CUdeviceptr)(uintptr_t)d, from, 4));
        }
    }
    static uint32_t h[N];
    CK(cuMemcpyDtoH(h, dst, sizeof h));
    int bad = 0;
    for (int i = 0; i < N; i++)
        bad += h[i] != (i % 3 == 0 ? 5u : 0u);
    printf("device-dst: words wrong=%d\n", bad);
    /* plain host reads of the same source (what coalescing serves) */
    uint64_t sum = 0;
    for (int i = 0; i < N; i += 7) {
        uint32_t v;
        CK(cuMemcpyDtoH(&v, src + 4 * (CUdeviceptr)i, 4));
        sum += v;
    }
    printf("host reads: sum=%llu\n", (unsigned long long)sum);

    /* zero: sizes of 0 and NULLs, as natively */
    CUdeviceptr z = 0;
    printf("zero: alloc0=%d free0=%d freeasync0=%d", (int)cuMemAlloc(&z, 0), (int)cuMemFree(0),
           (int)cuMemFreeAsync(0, s));
    printf(" dtoh0=%d htod0=%d dtohnull=%d\n", (int)cuMemcpyDtoH(h, src, 0),
           (int)cuMemcpyHtoD(dst, h, 0), (int)cuMemcpyDtoH(NULL, src, 4));
    CK(cuStreamSynchronize(s));
    CK(cuMemFree(src));
    CK(cuMemFree(dst));
    CK(cuStreamDestroy(s));
    return 0;
}
