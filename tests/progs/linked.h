/* linked.h - what the test programs linked with -lcuda share: a check macro
 * that exits on any driver error, the setup every one of them does (read
 * kernels.ptx, initialize, make the primary context current, load the
 * module), and a launch of its kernels. */
#ifndef GA_TEST_LINKED_H
#define GA_TEST_LINKED_H

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

/* Makes the primary context of device 0 current. Exits 77 (skip) when
 * cuInit fails, saying with what. */
static inline void linked_context(CUdevice *dev, CUcontext *ctx)
{
    CUresult r = cuInit(0);
    if (r != CUDA_SUCCESS) {
        fprintf(stderr, "SKIP: no CUDA device (cuInit returned %d)\n", (int)r);
        exit(77);
    }
    CK(cuDeviceGet(dev, 0));
    CK(cuDevicePrimaryCtxRetain(ctx, *dev));
    CK(cuCtxSetCurrent(*ctx));
}

/* Loads the PTX at `path` into the current primary context of device 0.
 * Exits 2 on a usage error, 77 (skip) when cuInit fails. */
static inline CUmodule linked_setup(int argc, char **argv, CUdevice *dev, CUcontext *ctx)
{
    static char ptx[1 << 16];
    FILE *f = argc > 1 ? fopen(argv[1], "rb") : NULL;
    if (!f) {
        fprintf(stderr, "usage: %s KERNELS.PTX\n", argv[0]);
        exit(2);
    }
    ptx[fread(ptx, 1, sizeof ptx - 1, f)] = 0;
    fclose(f);
    linked_context(dev, ctx);
    CUmodule mod;
    CK(cuModuleLoadData(&mod, ptx));
    return mod;
}

/* linked_setup, then the kernel `name` of kernels.ptx (fill or add). */
static inline CUfunction linked_kernel(int argc, char **argv, const char *name)
{
    CUdevice dev;
    CUcontext ctx;
    CUmodule mod = linked_setup(argc, argv, &dev, &ctx);
    CUfunction f;
    CK(cuModuleGetFunction(&f, mod, name));
    return f;
}

CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                             unsigned by, unsigned bz, unsigned shmem, CUstream s, void **params,
                             void **extra);

/* Launch kernels.ptx's fill or add (p[i] = v, or p[i] += v, for i < n) on s in
 * blocks of 128, through the per-thread entry point when ptsz. */
static inline void linked_launch(CUfunction f, CUstream s, CUdeviceptr p, uint32_t n, uint32_t v,
                                 int ptsz)
{
    void *args[] = {&p, &n, &v};
    if (ptsz)
        CK(cuLaunchKernel_ptsz(f, (n + 127) / 128, 1, 1, 128, 1, 1, 0, s, args, NULL));
    else
        CK(cuLaunchKernel(f, (n + 127) / 128, 1, 1, 128, 1, 1, 0, s, args, NULL));
}

#endif
