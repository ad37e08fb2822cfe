/* repeat_prog.c - one bounds-checked kernel launched four times with the same
 * arguments (fill: p[i] = v for i < n), as a benchmark's timing loop does. From
 * the second launch on its result is already in memory, so a tuner that only
 * compared results could not tell a configuration that skips work (one thread
 * would "reproduce" it); the tuner must notice. Runs against tests/fake.
 * usage: repeat_prog KERNELS.PTX  -> "sum=<sum of the 4096 words>" */
#include <cuda.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define CK(call)                                                                           \
    do {                                                                                   \
        CUresult r_ = (call);                                                              \
        if (r_ != CUDA_SUCCESS) {                                                          \
            fprintf(stderr, "%s:%d: %s failed: %d\n", __FILE__, __LINE__, #call, (int)r_);   \
            exit(1);                                                                       \
        }                                                                                  \
    } while (0)

enum { N = 4096 };

int main(int argc, char **argv)
{
    static char ptx[1 << 16];
    static uint32_t h[N];
    FILE *f = argc > 1 ? fopen(argv[1], "rb") : NULL;
    if (!f)
        return fprintf(stderr, "usage: %s KERNELS.PTX\n", argv[0]), 2;
    ptx[fread(ptx, 1, sizeof ptx - 1, f)] = 0;
    fclose(f);
    CUdevice dev;
    CUcontext ctx;
    CUmodule mod;
    CUfunction fill;
    CK(cuInit(0));
    CK(cuDeviceGet(&dev, 0));
    CK(cuDevicePrimaryCtxRetain(&ctx, dev));
    CK(cuCtxSetCurrent(ctx));
    CK(cuModuleLoadData(&mod, ptx));
    CK(cuModuleGetFunction(&fill, mod, "fill"));
    CUdeviceptr d;
    CK(cuMemAlloc(&d, sizeof h));
    uint32_t n = N, v = 7;
    void *args[] = {&d, &n, &v};
    for (int i = 0; i < 4; i++)
        CK(cuLaunchKernel(fill, N / 32, 1, 1, 32, 1, 1, 0, NULL, args, NULL));
    CK(cuMemcpyDtoH(h, d, sizeof h));
    uint64_t sum = 0;
    for (int i = 0; i < N; i++)
        sum += h[i];
    printf("sum=%llu\n", (unsigned long long)sum);
    return 0;
}
