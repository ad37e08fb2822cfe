/* fault_prog.c - the error codes a program sees after a kernel faults. Runs
 * against the fake driver (tests/fake), whose "fault" kernel leaves the sticky
 * CUDA_ERROR_ILLEGAL_ADDRESS behind, as a bad write does on a GPU. Before the
 * fault it gives every feature something to serve: a freed block (pool), a
 * read window (coalesce), a repeated launch sequence (graphs). After it, every
 * call must return what the driver returns, until the context is reset.
 * usage: fault_prog KERNELS.PTX  -> one line of "call=code" pairs */
#include "linked.h"
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

enum { N = 1024 };

static CUresult launch(CUfunction f, CUdeviceptr p, uint32_t v)
{
    uint32_t n = N;
    void *args[] = {&p, &n, &v};
    return cuLaunchKernel(f, N / 128, 1, 1, 128, 1, 1, 0, NULL, args, NULL);
}

int main(int argc, char **argv)
{
    CUdevice dev;
    CUcontext ctx;
    CUmodule mod = linked_setup(argc, argv, &dev, &ctx);
    CUfunction fill, add_fn, fault;
    CK(cuModuleGetFunction(&fill, mod, "fill"));
    CK(cuModuleGetFunction(&add_fn, mod, "add"));
    CK(cuModuleGetFunction(&fault, mod, "fault"));

    CUdeviceptr d, spare;
    uint32_t v = 0;
    CK(cuMemAlloc(&spare, 4 * N));
    CK(cuMemFree(spare)); /* a cached block for the next allocation */
    CK(cuMemAlloc(&d, 4 * N));
    CK(launch(fill, d, 1));
    for (int it = 0; it < 20; it++) { /* a sequence the graphs feature holds */
        for (int k = 0; k < 8; k++)
            CK(launch(add_fn, d, 1));
        CK(cuCtxSynchronize());
    }
    CK(cuMemcpyDtoH(&v, d, 4)); /* a window, if coalescing */
    CK(cuMemcpyDtoH(&v, d + 4, 4));
    CK(cuMemAlloc(&spare, 4 * N));
    CK(cuMemFree(spare)); /* and a cached block again */

    CUresult lf = launch(fault, d, 0);
    CUresult sync = cuCtxSynchronize();
    CUdeviceptr e = 0;
    CUresult alloc = cuMemAlloc(&e, 4 * N);
    CUresult read = cuMemcpyDtoH(&v, d + 8, 4);
    CUresult add[8];
    for (int k = 0; k < 8; k++) /* the held sequence's first kernels */
        add[k] = launch(add_fn, d, 1);
    CUresult release = cuMemFree(d);
    CUresult twice = cuMemFree(spare); /* a double free: the driver says 700 now */
    CUresult reset = cuDevicePrimaryCtxReset(dev);
    CK(cuCtxSetCurrent(ctx));
    CUresult after = cuMemAlloc(&e, 4 * N);
    printf("fault=%d sync=%d alloc=%d read=%d launch=", lf, sync, alloc, read);
    for (int k = 0; k < 8; k++)
        printf("%d%s", add[k], k < 7 ? "," : "");
    printf(" free=%d twice=%d reset=%d after=%d v=%u\n", release, twice, reset, after, v);
    return 0;
}
