/* item_prog.c - how PyTorch's .item() and CuPy read a scalar: a 4-byte
 * cuMemcpyDtoHAsync on the default (NULL) stream, then cuStreamSynchronize of
 * that stream, element after element; then a kernel changes the data and the
 * reads go on (they must see the change). With "mixed", each such read is
 * followed, before its stream sync, by a synchronous read of the next word.
 * Runs against tests/fake.
 * usage: item_prog KERNELS.PTX [mixed]  -> "sum=<before> <after>" */
#include "linked.h"
#include <stdint.h>
#include <string.h>

enum { N = 1024 };

static int mixed;

static uint64_t read_all(CUdeviceptr d)
{
    uint64_t sum = 0;
    for (int k = 0; k < N; k++) {
        uint32_t v, w = 0;
        CK(cuMemcpyDtoHAsync(&v, d + 4 * (CUdeviceptr)k, 4, NULL));
        if (mixed) /* the legacy stream orders it after the async read */
            CK(cuMemcpyDtoH(&w, d + 4 * (CUdeviceptr)((k + 1) % N), 4));
        CK(cuStreamSynchronize(NULL));
        sum += v * (uint64_t)(k + 1) + w;
    }
    return sum;
}

int main(int argc, char **argv)
{
    CUdevice dev;
    CUcontext ctx;
    CUmodule mod = linked_setup(argc, argv, &dev, &ctx);
    CUfunction add;
    CK(cuModuleGetFunction(&add, mod, "add"));
    mixed = argc > 2 && !strcmp(argv[2], "mixed");
    static uint32_t h[N];
    for (int i = 0; i < N; i++)
        h[i] = (uint32_t)i * 2654435761u;
    CUdeviceptr d;
    CK(cuMemAlloc(&d, sizeof h));
    CK(cuMemcpyHtoD(d, h, sizeof h));
    uint64_t before = read_all(d);
    uint32_t n = N, v = 3;
    void *args[] = {&d, &n, &v};
    CK(cuLaunchKernel(add, N / 128, 1, 1, 128, 1, 1, 0, NULL, args, NULL));
    uint64_t after = read_all(d);
    printf("sum=%llu %llu\n", (unsigned long long)before, (unsigned long long)after);
    return 0;
}
