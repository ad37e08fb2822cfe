/*
 * bench_ab_driver.cu - the cost of the library's exported entry points against
 * the driver's own, measured inside one process (so machine drift between
 * processes, which spans far more than 1% on one GPU, cancels out).
 *
 * A program linked with -lcuda calls the exported cuLaunchKernel /
 * cuMemcpyDtoH_v2: under LD_PRELOAD that is the library's wrapper. The same
 * entry point obtained through cuGetProcAddress is what cudart, PyTorch and
 * CuPy call: with no feature on, the library hands out the driver's own
 * pointer there. Blocks of COUNT calls through each alternate, BLOCKS times
 * each; the median per-call time of each and their ratio are printed.
 * Natively both pointers are the driver's: the ratio shows the method's floor.
 *
 * usage: bench_ab_driver [--op launch|dtoh] [--count N] [--blocks B]
 * Prints "result ab <linked/getproc ratio> op=... linked=<us> getproc=<us>".
 */
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../tests/progs/linked.h" /* CK, linked_context */
#include "clock.h"

static const char ptx[] =
    ".version 8.0\n.target sm_80\n.address_size 64\n"
    ".visible .entry empty()\n{\n ret;\n}\n";

typedef CUresult (*launch_fn)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                              unsigned, unsigned, CUstream, void **, void **);
typedef CUresult (*dtoh_fn)(void *, CUdeviceptr, size_t);

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double block_us(int launch, void *fn, CUfunction f, CUdeviceptr d, long count)
{
    uint32_t v;
    double t0 = now_us();
    for (long i = 0; i < count; i++) {
        if (launch)
            CK(((launch_fn)fn)(f, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL));
        else
            CK(((dtoh_fn)fn)(&v, d, sizeof v));
    }
    CK(cuCtxSynchronize());
    CK(cuStreamQuery(0)); /* observes the device (timer_sync in common.h) */
    return (now_us() - t0) / (double)count;
}

int main(int argc, char **argv)
{
    int launch = 1;
    long count = 20000, blocks = 31;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--op"))
            launch = strcmp(argv[i + 1], "dtoh") != 0;
        else if (!strcmp(argv[i], "--count"))
            count = atol(argv[i + 1]);
        else if (!strcmp(argv[i], "--blocks"))
            blocks = atol(argv[i + 1]);
        else
            return fprintf(stderr, "usage: %s [--op launch|dtoh] [--count N] [--blocks B]\n",
                           argv[0]), 2;
    }
    CUdevice dev;
    CUcontext ctx;
    CUmodule m;
    CUfunction f;
    CUdeviceptr d;
    linked_context(&dev, &ctx);
    CK(cuModuleLoadData(&m, ptx));
    CK(cuModuleGetFunction(&f, m, "empty"));
    CK(cuMemAlloc(&d, 4096));
    CK(cuMemsetD8(d, 7, 4096));
    void *linked = launch ? (void *)&cuLaunchKernel : (void *)&cuMemcpyDtoH_v2, *getproc = NULL;
    CK(cuGetProcAddress(launch ? "cuLaunchKernel" : "cuMemcpyDtoH", &getproc, 12000,
                        CU_GET_PROC_ADDRESS_DEFAULT, NULL));
    double *a = (double *)calloc(blocks, sizeof *a), *b = (double *)calloc(blocks, sizeof *b);
    block_us(launch, linked, f, d, count); /* warm-up, both */
    block_us(launch, getproc, f, d, count);
    for (long k = 0; k < blocks; k++) { /* alternate, and alternate who goes first */
        if (k % 2) {
            a[k] = block_us(launch, linked, f, d, count);
            b[k] = block_us(launch, getproc, f, d, count);
        } else {
            b[k] = block_us(launch, getproc, f, d, count);
            a[k] = block_us(launch, linked, f, d, count);
        }
    }
    double *r = (double *)calloc(blocks, sizeof *r);
    for (long k = 0; k < blocks; k++)
        r[k] = a[k] / b[k];
    qsort(a, blocks, sizeof *a, cmp);
    qsort(b, blocks, sizeof *b, cmp);
    qsort(r, blocks, sizeof *r, cmp);
    printf("result ab %.4f op=%s linked=%.4f getproc=%.4f ratio_q1=%.4f ratio_q3=%.4f "
           "same_pointer=%d blocks=%ld count=%ld\n",
           r[blocks / 2], launch ? "launch" : "dtoh", a[blocks / 2], b[blocks / 2],
           r[blocks / 4], r[3 * blocks / 4], linked == getproc, blocks, count);
    CK(cuMemFree(d));
    return 0;
}
